//! `#[derive(Partial)]`: the partial form of a type, for streamed calls.
//!
//! A struct with named fields gets `<Name>Partial`, a struct of the same visibility whose
//! fields are the partial forms of the original's, each optional, read from the JSON
//! object under the names serde uses (`rename`, `rename_all`; `flatten`ed fields read the
//! same object; skipped fields are left out). A newtype (or `transparent`) struct is its
//! field's partial form. Enums, and types read through `from` / `try_from`, have no
//! parts: they appear whole, once complete, so they must be `Clone + Debug + PartialEq`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Type};

use crate::ctxt::Errors;
use crate::serde_attrs::{
    ContainerAttrs, RENAME_RULES, container_attrs, ident_name, member_attrs, renamed,
};

/// Generates the partial type and the `Partial` impl, or every error found.
pub(crate) fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    if !input.generics.params.is_empty() {
        errors.spanned(
            &input.generics,
            format!(
                "`#[derive(Partial)]` does not support generic types; implement `intent_rs::Partial` for `{}` by hand",
                input.ident
            ),
        );
    }
    let container = container_attrs(&input.attrs);
    check_rename_rule(&container, &mut errors);
    let body = match &input.data {
        _ if container.converted => whole(input),
        Data::Enum(_) => whole(input),
        Data::Union(data) => {
            errors.spanned(
                data.union_token,
                "`Partial` cannot be derived for a union; serde has no JSON form for it",
            );
            TokenStream::new()
        }
        Data::Struct(data) => match &data.fields {
            Fields::Unit => whole(input),
            Fields::Unnamed(fields) if fields.unnamed.len() == 1 => {
                inner(input, &fields.unnamed[0].ty)
            }
            Fields::Named(fields) if container.transparent && fields.named.len() == 1 => {
                inner(input, &fields.named[0].ty)
            }
            Fields::Unnamed(fields) => {
                errors.spanned(
                    fields,
                    "a tuple struct has no partial form (it is an array of positional items); use named fields",
                );
                TokenStream::new()
            }
            Fields::Named(_) => object(input, &data.fields, &container),
        },
    };
    errors.finish(body)
}

/// A type without parts: shown once complete.
fn whole(input: &DeriveInput) -> TokenStream {
    let name = &input.ident;
    quote! {
        impl ::intent_rs::Partial for #name {
            type Partial = #name;
            fn read_partial(
                node: ::intent_rs::stream::PartialNode<'_>,
            ) -> ::core::option::Option<Self::Partial> {
                ::intent_rs::stream::read_whole(node)
            }
        }
    }
}

/// A type whose JSON is its one field's.
fn inner(input: &DeriveInput, ty: &Type) -> TokenStream {
    let name = &input.ident;
    quote! {
        impl ::intent_rs::Partial for #name {
            type Partial = <#ty as ::intent_rs::Partial>::Partial;
            fn read_partial(
                node: ::intent_rs::stream::PartialNode<'_>,
            ) -> ::core::option::Option<Self::Partial> {
                <#ty as ::intent_rs::Partial>::read_partial(node)
            }
        }
    }
}

/// A struct with named fields: `<Name>Partial` with every field optional.
fn object(input: &DeriveInput, fields: &Fields, container: &ContainerAttrs) -> TokenStream {
    let name = &input.ident;
    let vis = &input.vis;
    let partial = format_ident!("{}Partial", name);
    let mut declared = Vec::new();
    let mut reads = Vec::new();
    for field in fields {
        let attrs = member_attrs(&field.attrs);
        if attrs.skipped {
            continue;
        }
        let Some(ident) = &field.ident else { continue };
        let ty = attrs.with.as_ref().unwrap_or(&field.ty);
        let field_vis = &field.vis;
        let docs = field.attrs.iter().filter(|a| a.path().is_ident("doc"));
        declared.push(quote_spanned! {ty.span()=>
            #(#docs)*
            #field_vis #ident: ::core::option::Option<<#ty as ::intent_rs::Partial>::Partial>,
        });
        let read = if attrs.flatten {
            quote!(<#ty as ::intent_rs::Partial>::read_partial(node))
        } else {
            let key = attrs
                .rename
                .unwrap_or_else(|| renamed(&ident_name(ident), container.rename_all.as_ref()));
            quote!(node.field(#key).and_then(<#ty as ::intent_rs::Partial>::read_partial))
        };
        reads.push(quote!(#ident: #read,));
    }
    let doc = format!(
        " [`{name}`] as far as the model has written it: every field optional, each shown once it is certain. Generated by `#[derive(Partial)]`."
    );
    quote! {
        #[doc = #doc]
        #[derive(
            ::core::clone::Clone,
            ::core::fmt::Debug,
            ::core::cmp::PartialEq,
            ::core::default::Default,
        )]
        #vis struct #partial {
            #(#declared)*
        }

        impl ::intent_rs::Partial for #name {
            type Partial = #partial;
            fn read_partial(
                node: ::intent_rs::stream::PartialNode<'_>,
            ) -> ::core::option::Option<Self::Partial> {
                if !node.is_object() {
                    return ::core::option::Option::None;
                }
                ::core::option::Option::Some(#partial { #(#reads)* })
            }
        }
    }
}

/// Reports a `rename_all` rule serde does not know (the partial could not name the
/// fields as serde does).
fn check_rename_rule(container: &ContainerAttrs, errors: &mut Errors) {
    if let Some(rule) = &container.rename_all
        && !RENAME_RULES.contains(&rule.value().as_str())
    {
        errors.spanned(
            rule,
            "unknown `rename_all` rule; serde reports which it accepts",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn derive(source: &str) -> Result<String, String> {
        let input: DeriveInput = syn::parse_str(source).unwrap();
        expand(&input)
            .map(|t| t.to_string())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn fields_are_read_under_serde_names() {
        let out = derive(
            "#[serde(rename_all = \"camelCase\")] pub struct Invoice { pub item_name: String, #[serde(rename = \"n\")] number: u32, #[serde(skip)] cache: Cache, #[serde(flatten)] extra: Extra }",
        )
        .unwrap();
        assert!(out.contains("pub struct InvoicePartial"), "{out}");
        assert!(out.contains("node . field (\"itemName\")"), "{out}");
        assert!(out.contains("node . field (\"n\")"), "{out}");
        assert!(!out.contains("cache"), "{out}");
        assert!(
            out.contains("extra : < Extra as :: intent_rs :: Partial > :: read_partial (node)"),
            "{out}"
        );
    }

    #[test]
    fn enums_and_newtypes_have_no_partial_struct() {
        let out = derive("enum Mood { Happy, Sad }").unwrap();
        assert!(out.contains("type Partial = Mood"), "{out}");
        let out = derive("struct Id(String);").unwrap();
        assert!(
            out.contains("type Partial = < String as :: intent_rs :: Partial > :: Partial"),
            "{out}"
        );
    }

    #[test]
    fn generic_types_tuples_and_unions_are_rejected() {
        assert!(derive("struct Page<T> { items: Vec<T> }").is_err());
        assert!(derive("struct P(u8, u8);").is_err());
        assert!(derive("union U { a: u8 }").is_err());
    }
}
