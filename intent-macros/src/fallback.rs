//! What is emitted next to the errors: the trait as written and a client whose bodies are
//! `unreachable!()`, so that code using them keeps compiling and the errors stay the
//! macro's own (thiserror's `fallback`, clap's `dummies`).

use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;
use syn::{
    FnArg, GenericArgument, ItemTrait, Pat, PatWild, PathArguments, PathSegment, ReturnType, Token,
    TraitItem, Type,
};

use crate::expand::{client_header, client_name, send_trait};

/// The errors, then the fallback trait and client.
pub(crate) fn with_error(item: &ItemTrait, error: syn::Error) -> TokenStream {
    let error = error.into_compile_error();
    let intent_trait = send_trait(&without_repeated_errors(item));
    let header = client_header(item, &quote!(#[allow(dead_code)]), &[]);
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

/// The trait with the declarations the macro refuses, and the compiler would refuse
/// again, made acceptable: a pattern for an input (the macro asks for a plain name)
/// becomes `_`, and a `Choice` or `Score` without its enum (the macro asks for one) gets
/// a placeholder enum. The macro's error is then the only one for that mistake.
fn without_repeated_errors(item: &ItemTrait) -> ItemTrait {
    let mut item = item.clone();
    for trait_item in &mut item.items {
        let TraitItem::Fn(method) = trait_item else {
            continue;
        };
        if method.default.is_some() {
            continue;
        }
        for input in &mut method.sig.inputs {
            if let FnArg::Typed(typed) = input
                && !matches!(&*typed.pat, Pat::Ident(_) | Pat::Wild(_))
            {
                let span = typed.pat.span();
                *typed.pat = Pat::Wild(PatWild {
                    attrs: Vec::new(),
                    underscore_token: Token![_](span),
                });
            }
        }
        if let ReturnType::Type(_, ty) = &mut method.sig.output
            && let Some(target) = first_type_argument(ty)
        {
            name_placeholder_options(target);
        }
    }
    item
}

/// `T` of `Wrapper<T, ..>`.
fn first_type_argument(ty: &mut Type) -> Option<&mut Type> {
    let PathArguments::AngleBracketed(args) = &mut last_segment(ty)?.arguments else {
        return None;
    };
    args.args.iter_mut().find_map(|arg| match arg {
        GenericArgument::Type(ty) => Some(ty),
        _ => None,
    })
}

/// `Choice` as `Choice<UnnamedOptions>` (and `Score` likewise).
fn name_placeholder_options(target: &mut Type) {
    if let Some(segment) = last_segment(target) {
        let decision = segment.ident == "Choice" || segment.ident == "Score";
        if decision && segment.arguments.is_none() {
            segment.arguments = PathArguments::AngleBracketed(syn::parse_quote!(
                <::intent_rs::__private::UnnamedOptions>
            ));
        }
    }
}

fn last_segment(ty: &mut Type) -> Option<&mut PathSegment> {
    match ty {
        Type::Path(path) if path.qself.is_none() => path.path.segments.last_mut(),
        Type::Group(group) => last_segment(&mut group.elem),
        Type::Paren(paren) => last_segment(&mut paren.elem),
        _ => None,
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
    fn what_the_macro_refused_is_not_refused_again_by_the_compiler() {
        let item: ItemTrait = syn::parse_quote! {
            trait Triage {
                #[intent("Which team?")]
                async fn route(&self, (a, b): (u8, u8)) -> Result<Choice, DecisionError>;
                #[intent("How urgent?")]
                async fn urgency(&self, ticket: &str) -> Result<intent_rs::Score, DecisionError>;
            }
        };
        let text =
            with_error(&item, syn::Error::new(proc_macro2::Span::call_site(), "x")).to_string();
        assert!(text.contains("fn route (& self , _ : (u8 , u8))"), "{text}");
        assert!(
            text.contains(
                "Result < Choice < :: intent_rs :: __private :: UnnamedOptions > , DecisionError >"
            ),
            "{text}"
        );
        assert!(
            text.contains("Result < intent_rs :: Score < :: intent_rs :: __private :: UnnamedOptions > , DecisionError >"),
            "{text}"
        );
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
