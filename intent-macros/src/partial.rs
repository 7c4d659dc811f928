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
use syn::{Attribute, Data, DeriveInput, Field, Fields, LitStr, Type};

use crate::ctxt::Errors;

/// The serde naming and shape of a field.
#[derive(Default)]
struct FieldAttrs {
    rename: Option<String>,
    skipped: bool,
    flatten: bool,
    /// `#[schemars(with = "T")]`: the JSON is `T`'s.
    with: Option<Type>,
}

/// The container attributes that change how the partial is read.
#[derive(Default)]
struct ContainerAttrs {
    rename_all: Option<LitStr>,
    transparent: bool,
    /// `from` / `try_from`: read through another type, so only whole.
    converted: bool,
}

/// Generates the partial type and the `Partial` impl, or every error found.
pub(crate) fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    if !input.generics.params.is_empty() {
        errors.spanned(
            &input.generics,
            format!(
                "`#[derive(Partial)]` does not support generic types; implement `intent_runtime::Partial` for `{}` by hand",
                input.ident
            ),
        );
    }
    let container = container_attrs(&input.attrs, &mut errors);
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
        impl ::intent_runtime::Partial for #name {
            type Partial = #name;
            fn read_partial(
                node: ::intent_runtime::stream::PartialNode<'_>,
            ) -> ::core::option::Option<Self::Partial> {
                ::intent_runtime::stream::read_whole(node)
            }
        }
    }
}

/// A type whose JSON is its one field's.
fn inner(input: &DeriveInput, ty: &Type) -> TokenStream {
    let name = &input.ident;
    quote! {
        impl ::intent_runtime::Partial for #name {
            type Partial = <#ty as ::intent_runtime::Partial>::Partial;
            fn read_partial(
                node: ::intent_runtime::stream::PartialNode<'_>,
            ) -> ::core::option::Option<Self::Partial> {
                <#ty as ::intent_runtime::Partial>::read_partial(node)
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
        let attrs = field_attrs(field);
        if attrs.skipped {
            continue;
        }
        let Some(ident) = &field.ident else { continue };
        let ty = attrs.with.as_ref().unwrap_or(&field.ty);
        let field_vis = &field.vis;
        let docs = field.attrs.iter().filter(|a| a.path().is_ident("doc"));
        declared.push(quote_spanned! {ty.span()=>
            #(#docs)*
            #field_vis #ident: ::core::option::Option<<#ty as ::intent_runtime::Partial>::Partial>,
        });
        let read = if attrs.flatten {
            quote!(<#ty as ::intent_runtime::Partial>::read_partial(node))
        } else {
            let key = attrs
                .rename
                .unwrap_or_else(|| renamed(&ident_name(ident), container.rename_all.as_ref()));
            quote!(node.field(#key).and_then(<#ty as ::intent_runtime::Partial>::read_partial))
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

        impl ::intent_runtime::Partial for #name {
            type Partial = #partial;
            fn read_partial(
                node: ::intent_runtime::stream::PartialNode<'_>,
            ) -> ::core::option::Option<Self::Partial> {
                if !node.is_object() {
                    return ::core::option::Option::None;
                }
                ::core::option::Option::Some(#partial { #(#reads)* })
            }
        }
    }
}

fn ident_name(ident: &syn::Ident) -> String {
    let text = ident.to_string();
    text.strip_prefix("r#").map(str::to_owned).unwrap_or(text)
}

/// `field` (snake case, as Rust fields are) under serde's `rename_all` rule.
fn renamed(field: &str, rule: Option<&LitStr>) -> String {
    let Some(rule) = rule else {
        return field.to_owned();
    };
    let words: Vec<&str> = field.split('_').filter(|w| !w.is_empty()).collect();
    let capitalized = |word: &str| {
        let mut chars = word.chars();
        chars.next().map_or_else(String::new, |first| {
            first.to_uppercase().chain(chars).collect()
        })
    };
    match rule.value().as_str() {
        "lowercase" => field.to_lowercase(),
        "UPPERCASE" => field.to_uppercase(),
        "PascalCase" => words.iter().map(|w| capitalized(w)).collect(),
        "camelCase" => words
            .iter()
            .enumerate()
            .map(|(i, w)| {
                if i == 0 {
                    (*w).to_owned()
                } else {
                    capitalized(w)
                }
            })
            .collect(),
        "SCREAMING_SNAKE_CASE" => field.to_uppercase(),
        "kebab-case" => field.replace('_', "-"),
        "SCREAMING-KEBAB-CASE" => field.replace('_', "-").to_uppercase(),
        _ => field.to_owned(),
    }
}

fn container_attrs(attrs: &[Attribute], errors: &mut Errors) -> ContainerAttrs {
    let mut parsed = ContainerAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        // serde_derive reports malformed serde attributes; this derive only reads them.
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename_all") {
                parsed.rename_all = deserialize_name(&meta)?;
            } else if meta.path.is_ident("transparent") {
                parsed.transparent = true;
            } else if meta.path.is_ident("from") || meta.path.is_ident("try_from") {
                parsed.converted = true;
                return skip_value(&meta);
            } else {
                return skip_value(&meta);
            }
            Ok(())
        });
    }
    if let Some(rule) = &parsed.rename_all {
        const RULES: &[&str] = &[
            "lowercase",
            "UPPERCASE",
            "PascalCase",
            "camelCase",
            "snake_case",
            "SCREAMING_SNAKE_CASE",
            "kebab-case",
            "SCREAMING-KEBAB-CASE",
        ];
        if !RULES.contains(&rule.value().as_str()) {
            errors.spanned(
                rule,
                "unknown `rename_all` rule; serde reports which it accepts",
            );
        }
    }
    parsed
}

fn field_attrs(field: &Field) -> FieldAttrs {
    let mut parsed = FieldAttrs::default();
    for attr in &field.attrs {
        let is_schemars = attr.path().is_ident("schemars");
        if !is_schemars && !attr.path().is_ident("serde") {
            continue;
        }
        // serde_derive reports malformed serde attributes; this derive only reads them.
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("skip") || meta.path.is_ident("skip_deserializing") {
                parsed.skipped = true;
            } else if meta.path.is_ident("flatten") {
                parsed.flatten = true;
            } else if !is_schemars && meta.path.is_ident("rename") {
                parsed.rename = deserialize_name(&meta)?.map(|name| name.value());
                return Ok(());
            } else if is_schemars && meta.path.is_ident("with") {
                let text: LitStr = meta.value()?.parse()?;
                parsed.with = text.parse().ok();
                return Ok(());
            } else {
                return skip_value(&meta);
            }
            Ok(())
        });
    }
    parsed
}

/// `key = "name"` or `key(deserialize = "name", ...)`: the name used when reading.
fn deserialize_name(meta: &syn::meta::ParseNestedMeta) -> syn::Result<Option<LitStr>> {
    if meta.input.peek(syn::Token![=]) {
        return Ok(Some(meta.value()?.parse()?));
    }
    let mut name = None;
    meta.parse_nested_meta(|inner| {
        if inner.path.is_ident("deserialize") {
            name = Some(inner.value()?.parse()?);
        } else {
            inner.value()?.parse::<LitStr>()?;
        }
        Ok(())
    })?;
    Ok(name)
}

/// Consumes the value of a key this derive does not need (`= expr` or `(...)`).
fn skip_value(meta: &syn::meta::ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<TokenStream>()?;
    }
    Ok(())
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
            out.contains(
                "extra : < Extra as :: intent_runtime :: Partial > :: read_partial (node)"
            ),
            "{out}"
        );
    }

    #[test]
    fn enums_and_newtypes_have_no_partial_struct() {
        let out = derive("enum Mood { Happy, Sad }").unwrap();
        assert!(out.contains("type Partial = Mood"), "{out}");
        let out = derive("struct Id(String);").unwrap();
        assert!(
            out.contains("type Partial = < String as :: intent_runtime :: Partial > :: Partial"),
            "{out}"
        );
    }

    #[test]
    fn rename_rules_follow_serde() {
        let rule = |r: &str| LitStr::new(r, proc_macro2::Span::call_site());
        assert_eq!(renamed("due_date", Some(&rule("PascalCase"))), "DueDate");
        assert_eq!(renamed("due_date", Some(&rule("camelCase"))), "dueDate");
        assert_eq!(
            renamed("due_date", Some(&rule("SCREAMING-KEBAB-CASE"))),
            "DUE-DATE"
        );
        assert_eq!(renamed("due_date", None), "due_date");
    }

    #[test]
    fn generic_types_tuples_and_unions_are_rejected() {
        assert!(derive("struct Page<T> { items: Vec<T> }").is_err());
        assert!(derive("struct P(u8, u8);").is_err());
        assert!(derive("union U { a: u8 }").is_err());
    }
}
