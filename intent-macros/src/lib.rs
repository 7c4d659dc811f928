//! Procedural macros for intent-rs. Use them through `intent_runtime`, which re-exports
//! them.
//!
//! STUB: the macro issue (#4) fills this crate in.

use proc_macro::TokenStream;

/// Turns a trait of intent methods into a typed client.
#[proc_macro_attribute]
pub fn intents(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}

/// Derives `StrictCompatible` for a struct or enum whose fields are all strict-compatible.
#[proc_macro_derive(StrictCompatible)]
pub fn derive_strict_compatible(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote::quote!(impl #impl_generics ::intent_runtime::StrictCompatible for #name #ty_generics #where_clause {}).into()
}
