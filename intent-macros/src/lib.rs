//! Procedural macros for intent-rs: `#[intents]` turns a trait of intent methods into a
//! typed client, and `#[derive(StrictCompatible)]` proves a type has a strict schema.
//!
//! Use them through `intent_runtime`, which re-exports them. The stages follow serde's and
//! thiserror's layout: [`attr`] reads the attributes, [`model`] builds the typed model of
//! the trait, [`check`] validates it, [`expand`] writes the client, and [`fallback`] keeps
//! the trait compiling next to the errors so that one mistake does not cascade.

mod attr;
mod check;
mod ctxt;
mod expand;
mod fallback;
mod model;
mod strict;

use proc_macro::TokenStream;

/// Turns a trait of intent methods into a typed client, `<Trait>Client`.
///
/// See the `intent_runtime` crate documentation for the method attributes.
#[proc_macro_attribute]
pub fn intents(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = syn::parse_macro_input!(item as syn::ItemTrait);
    expand::intents(args.into(), &item)
        .unwrap_or_else(|error| fallback::with_error(&item, error))
        .into()
}

/// Derives `StrictCompatible` for a struct or enum whose fields are all strict-compatible.
#[proc_macro_derive(StrictCompatible, attributes(serde, schemars))]
pub fn derive_strict_compatible(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    strict::expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
