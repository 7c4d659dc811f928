//! Decision questions in the DSL: which decision type a method returns, and
//! `#[derive(DecisionEnum)]` for the enums whose variants are the options. The methods
//! themselves are recognized in `model`, checked in `check` and generated in `expand`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Attribute, Data, DeriveInput, Expr, ExprLit, Fields, Lit, Meta};

use crate::ctxt::Errors;

/// Which decision type a method returns.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum DecisionKind {
    Binary,
    Choice,
    Score,
}

/// The decision type named `name`, if it is one.
pub(crate) fn kind_named(name: &str) -> Option<DecisionKind> {
    match name {
        "Binary" => Some(DecisionKind::Binary),
        "Choice" => Some(DecisionKind::Choice),
        "Score" => Some(DecisionKind::Score),
        _ => None,
    }
}

/// An implementation with no options, emitted beside a derive error only.
fn fallback(name: &syn::Ident) -> TokenStream {
    quote! {
        impl ::intent_rs::DecisionEnum for #name {
            const VARIANTS: &'static [::intent_rs::decision::DecisionVariant] = &[];

            fn from_index(_: usize) -> ::core::option::Option<Self> {
                ::core::option::Option::None
            }

            fn index(&self) -> usize {
                ::core::unreachable!()
            }
        }
    }
}

/// `#[derive(DecisionEnum)]`: the variants' names and doc comments, and the mapping
/// between variants and their index, for an enum of two or more variants without data.
pub(crate) fn derive(input: &DeriveInput) -> syn::Result<TokenStream> {
    let name = &input.ident;
    let Data::Enum(data) = &input.data else {
        return Err(syn::Error::new_spanned(
            name,
            format!(
                "`DecisionEnum` is derived only for enums: the options of a decision question are the variants of an enum without data, and `{name}` is not an enum"
            ),
        ));
    };
    let mut errors = Errors::default();
    if !input.generics.params.is_empty() {
        errors.spanned(
            &input.generics,
            "`DecisionEnum` cannot be derived for a generic enum: the options of a decision question are fixed variants",
        );
    }
    for variant in &data.variants {
        if !matches!(variant.fields, Fields::Unit) {
            errors.spanned(
                &variant.fields,
                format!(
                    "variant `{}` carries data; the options of a decision question are variants without data, like `{}`",
                    variant.ident, variant.ident
                ),
            );
        }
    }
    if data.variants.len() < 2 {
        errors.spanned(
            name,
            format!(
                "a decision question needs at least two options, and `{name}` has {} variant{}",
                data.variants.len(),
                if data.variants.len() == 1 { "" } else { "s" }
            ),
        );
    }
    if let Err(error) = errors.finish(()) {
        // With the error, an implementation that compiles, so that every method using the
        // enum does not add an error of its own about a missing `DecisionEnum`.
        let mut tokens = error.into_compile_error();
        if input.generics.params.is_empty() {
            tokens.extend(fallback(name));
        }
        return Ok(tokens);
    }
    let entries = data.variants.iter().map(|variant| {
        let text = variant.ident.to_string();
        let description = match doc_text(&variant.attrs) {
            Some(doc) => quote!(::core::option::Option::Some(#doc)),
            None => quote!(::core::option::Option::None),
        };
        quote!(::intent_rs::decision::DecisionVariant { name: #text, description: #description })
    });
    let idents: Vec<_> = data.variants.iter().map(|v| &v.ident).collect();
    let indices = 0..idents.len();
    let indices_again = 0..idents.len();
    Ok(quote! {
        impl ::intent_rs::DecisionEnum for #name {
            const VARIANTS: &'static [::intent_rs::decision::DecisionVariant] = &[#(#entries),*];

            fn from_index(index: usize) -> ::core::option::Option<Self> {
                match index {
                    #(#indices => ::core::option::Option::Some(Self::#idents),)*
                    _ => ::core::option::Option::None,
                }
            }

            fn index(&self) -> usize {
                match self {
                    #(Self::#idents => #indices_again,)*
                }
            }
        }
    })
}

/// The doc comment's lines, trimmed and joined by spaces.
fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(text),
                    ..
                }) => Some(text.value().trim().to_owned()),
                _ => None,
            },
            _ => None,
        })
        .filter(|line| !line.is_empty())
        .collect();
    (!lines.is_empty()).then(|| lines.join(" "))
}
