//! What is emitted next to the errors: the trait as written and a client whose bodies are
//! `unreachable!()`, so that code using them keeps compiling and the errors stay the
//! macro's own (thiserror's `fallback`, clap's `dummies`).

use proc_macro2::TokenStream;
use quote::quote;
use syn::{ItemTrait, TraitItem};

use crate::expand::{client_header, client_name, send_trait};

/// The errors, then the fallback trait and client.
pub(crate) fn with_error(item: &ItemTrait, error: syn::Error) -> TokenStream {
    let error = error.into_compile_error();
    let intent_trait = send_trait(item);
    let header = client_header(item, &quote!(#[allow(dead_code)]));
    let name = client_name(item);
    let trait_name = &item.ident;
    let (impl_generics, ty_generics, where_clause) = item.generics.split_for_impl();
    // An item the client cannot implement (an associated type or const, or the promise of
    // an unsafe trait) would add an error of its own; the trait still compiles without it.
    let only_methods = intent_trait
        .items
        .iter()
        .all(|i| matches!(i, TraitItem::Fn(_)));
    let implementable = only_methods && item.unsafety.is_none();
    let methods = intent_trait
        .items
        .iter()
        .filter_map(|trait_item| match trait_item {
            TraitItem::Fn(method) if method.default.is_none() => {
                let sig = &method.sig;
                let body = if is_future(sig) {
                    quote!(async move { ::core::unreachable!() })
                } else {
                    quote!(::core::unreachable!())
                };
                Some(quote!(#sig { #body }))
            }
            _ => None,
        });
    let client_impl = implementable.then(|| {
        quote! {
            #[allow(unused_variables, clippy::manual_async_fn)]
            impl #impl_generics #trait_name #ty_generics for #name #where_clause {
                #(#methods)*
            }
        }
    });
    quote! {
        #error
        #intent_trait
        #header
        #client_impl
    }
}

/// `#[intents]` on something else: the error, and the item unchanged so that code using
/// it reports nothing more.
pub(crate) fn not_a_trait(item: TokenStream) -> TokenStream {
    let error = syn::Error::new_spanned(
        &item,
        "`#[intents]` applies to a trait whose methods are intents, like `#[intents] trait Documents { ... }`",
    )
    .into_compile_error();
    quote!(#error #item)
}

fn is_future(sig: &syn::Signature) -> bool {
    matches!(&sig.output, syn::ReturnType::Type(_, ty) if matches!(&**ty, syn::Type::ImplTrait(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallback_keeps_the_trait_and_a_client_without_our_attributes() {
        let item: ItemTrait = syn::parse_quote! {
            trait Docs {
                #[intent(bad)]
                async fn summary(&self, text: &str) -> Result<String, IntentError>;
                fn provided(&self) -> u8 { 1 }
            }
        };
        let text = with_error(
            &item,
            syn::Error::new(proc_macro2::Span::call_site(), "boom"),
        )
        .to_string();
        assert!(text.contains("compile_error ! { \"boom\" }"), "{text}");
        assert!(text.contains("trait Docs"), "{text}");
        assert!(text.contains("impl Docs for DocsClient"), "{text}");
        assert!(
            text.contains("async move { :: core :: unreachable ! () }"),
            "{text}"
        );
        assert!(!text.contains("# [intent"), "{text}");
        // The provided method is inherited, not stubbed.
        assert_eq!(text.matches("fn provided").count(), 1, "{text}");
    }

    #[test]
    fn an_unsafe_trait_gets_no_client_impl() {
        let item: ItemTrait = syn::parse_quote!(
            unsafe trait Docs {}
        );
        let text =
            with_error(&item, syn::Error::new(proc_macro2::Span::call_site(), "x")).to_string();
        assert!(!text.contains("impl Docs for"), "{text}");
    }
}
