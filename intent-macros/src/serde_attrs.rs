//! The serde and schemars attributes the derives follow: names (`rename`, `rename_all`),
//! shape (`tag`, `content`, `untagged`, `transparent`, `flatten`), fields left out
//! (`skip`, `skip_deserializing`) and types that stand in for others (`from`, `try_from`,
//! `#[schemars(with = "T")]`).
//!
//! They are only read here: serde_derive and schemars report a malformed attribute, so a
//! key this module does not know is passed over and a malformed one is ignored.

use proc_macro2::TokenStream;
use syn::meta::ParseNestedMeta;
use syn::{Attribute, LitStr, Token, Type};

/// The container attributes the derives need.
#[derive(Default)]
pub(crate) struct ContainerAttrs {
    /// `rename_all` (or its `deserialize` half): the rule for every field's name.
    pub(crate) rename_all: Option<LitStr>,
    pub(crate) tag: bool,
    pub(crate) content: bool,
    pub(crate) untagged: bool,
    pub(crate) transparent: bool,
    /// `from` / `try_from`: the type is read through another one.
    pub(crate) converted: bool,
    /// That other type, when it parses as one.
    pub(crate) from: Option<Type>,
}

/// The attributes of one field or variant.
#[derive(Default)]
pub(crate) struct MemberAttrs {
    /// `#[serde(rename = "...")]` (or its `deserialize` half).
    pub(crate) rename: Option<String>,
    /// `skip` or `skip_deserializing`: never read.
    pub(crate) skipped: bool,
    pub(crate) flatten: bool,
    pub(crate) untagged: bool,
    /// `#[schemars(with = "T")]`: the JSON is `T`'s.
    pub(crate) with: Option<Type>,
}

/// Reads the container's `#[serde(...)]` attributes.
pub(crate) fn container_attrs(attrs: &[Attribute]) -> ContainerAttrs {
    let mut parsed = ContainerAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename_all") {
                parsed.rename_all = deserialize_name(&meta)?;
                return Ok(());
            } else if meta.path.is_ident("tag") {
                parsed.tag = true;
            } else if meta.path.is_ident("content") {
                parsed.content = true;
            } else if meta.path.is_ident("untagged") {
                parsed.untagged = true;
            } else if meta.path.is_ident("transparent") {
                parsed.transparent = true;
            } else if meta.path.is_ident("from") || meta.path.is_ident("try_from") {
                parsed.converted = true;
                parsed.from = type_value(&meta)?;
                return Ok(());
            }
            skip_value(&meta)
        });
    }
    parsed
}

/// Reads a field's or a variant's `#[serde(...)]` and `#[schemars(...)]` attributes.
pub(crate) fn member_attrs(attrs: &[Attribute]) -> MemberAttrs {
    let mut parsed = MemberAttrs::default();
    for attr in attrs {
        let is_schemars = attr.path().is_ident("schemars");
        if !is_schemars && !attr.path().is_ident("serde") {
            continue;
        }
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("skip") || meta.path.is_ident("skip_deserializing") {
                parsed.skipped = true;
            } else if meta.path.is_ident("flatten") {
                parsed.flatten = true;
            } else if meta.path.is_ident("untagged") {
                parsed.untagged = true;
            } else if !is_schemars && meta.path.is_ident("rename") {
                parsed.rename = deserialize_name(&meta)?.map(|name| name.value());
                return Ok(());
            } else if is_schemars && meta.path.is_ident("with") {
                parsed.with = type_value(&meta)?;
                return Ok(());
            }
            skip_value(&meta)
        });
    }
    parsed
}

/// The `rename_all` rules serde accepts.
pub(crate) const RENAME_RULES: &[&str] = &[
    "lowercase",
    "UPPERCASE",
    "PascalCase",
    "camelCase",
    "snake_case",
    "SCREAMING_SNAKE_CASE",
    "kebab-case",
    "SCREAMING-KEBAB-CASE",
];

/// The name serde reads `field` (snake case, as Rust fields are) under, given the
/// container's `rename_all` rule.
pub(crate) fn renamed(field: &str, rule: Option<&LitStr>) -> String {
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

/// A field's name as written, without the `r#` of a raw identifier (serde's name for it).
pub(crate) fn ident_name(ident: &syn::Ident) -> String {
    let text = ident.to_string();
    text.strip_prefix("r#").map(str::to_owned).unwrap_or(text)
}

/// `key = "name"` or `key(deserialize = "name", ...)`: the name used when reading.
fn deserialize_name(meta: &ParseNestedMeta) -> syn::Result<Option<LitStr>> {
    if meta.input.peek(Token![=]) {
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

/// `key = "Type"` as a type.
fn type_value(meta: &ParseNestedMeta) -> syn::Result<Option<Type>> {
    let text: LitStr = meta.value()?.parse()?;
    Ok(text.parse().ok())
}

/// Consumes the value of a key the derives do not need (`= expr` or `(...)`).
fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
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
    fn names_shape_and_stand_ins_are_read_and_other_keys_passed_over() {
        let container: syn::DeriveInput = syn::parse_quote! {
            #[serde(deny_unknown_fields, rename_all(deserialize = "camelCase"), tag = "kind")]
            #[serde(bound(deserialize = ""), try_from = "Raw")]
            struct S;
        };
        let attrs = container_attrs(&container.attrs);
        assert_eq!(
            attrs.rename_all.map(|r| r.value()).as_deref(),
            Some("camelCase")
        );
        assert!(attrs.tag && attrs.converted && !attrs.untagged && !attrs.transparent);
        assert!(attrs.from.is_some());

        let field: syn::Field = syn::parse_quote! {
            #[serde(default, rename = "n", with = "m")]
            #[schemars(with = "u8", rename = "ignored")]
            #[doc = "not read"]
            number: Number
        };
        let attrs = member_attrs(&field.attrs);
        assert_eq!(attrs.rename.as_deref(), Some("n"));
        assert!(attrs.with.is_some() && !attrs.skipped && !attrs.flatten);

        let skipped: syn::Field = syn::parse_quote! { #[serde(skip_deserializing)] cache: u8 };
        assert!(member_attrs(&skipped.attrs).skipped);
    }
}
