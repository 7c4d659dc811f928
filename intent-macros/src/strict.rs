//! `#[derive(StrictCompatible)]`: asserts every field type is strict-compatible (spanned on
//! the field), rejects types that contain themselves and shapes that have no strict
//! schema, and follows the serde attributes that change the schema.
//!
//! Decisions, with the `schemars` output they rest on:
//! - Fields skipped by `skip` / `skip_deserializing` are absent from the (deserialize)
//!   schema and are not checked; `skip_serializing` fields are in it and are checked.
//! - `#[serde(flatten)]` merges the field's properties into the parent object, so the
//!   field type must be a struct with named fields (`StrictObject`).
//! - `#[schemars(with = "T")]` puts `T`'s schema in place of the field's, so `T` is checked.
//! - Tuple structs and tuple variants with several fields become arrays of positional
//!   items (`prefixItems`), which strict modes reject: use named fields.
//! - Enum variants are alternatives (`oneOf` for tagged enums, `anyOf` for untagged):
//!   tagged alternatives exclude each other by their tag, so the strict walk can send
//!   them as `anyOf` without loss. An internally tagged newtype variant is a `$ref` with
//!   the tag property beside it, which cannot be made strict: it is rejected.
//! - A type that names itself (directly or through `Box`, `Vec`, `Option`, ...) has no
//!   finite strict schema. Recursion through another type cannot be seen by a derive; at
//!   run time the schema check finds the `$ref` cycle and asks in JSON-object mode.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{Data, DeriveInput, Field, Fields, Ident, Type};

use crate::ctxt::Errors;
use crate::serde_attrs::{container_attrs, member_attrs};

/// Generates the impls and the spanned field assertions, or every error found.
pub(crate) fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let container = container_attrs(&input.attrs);
    let mut assertions = Vec::new();
    let mut is_object = false;
    if let Some(from) = &container.from {
        assertions.push(assert_strict(from));
    } else {
        match &input.data {
            Data::Struct(data) => {
                is_object = matches!(data.fields, Fields::Named(_)) && !container.transparent;
                check_fields(
                    &input.ident,
                    &data.fields,
                    container.transparent,
                    &mut assertions,
                    &mut errors,
                );
            }
            Data::Enum(data) => {
                let internally_tagged = container.tag && !container.content && !container.untagged;
                for variant in &data.variants {
                    let attrs = member_attrs(&variant.attrs);
                    if attrs.skipped {
                        continue;
                    }
                    if internally_tagged && !attrs.untagged && newtype(&variant.fields) {
                        errors.spanned(
                            variant,
                            format!(
                                "`{}::{}` cannot be made strict: an internally tagged newtype variant puts the tag beside a reference to the inner type; write a struct variant `{} {{ field: T }}` or use adjacent tagging `#[serde(tag = \"...\", content = \"...\")]`",
                                input.ident, variant.ident, variant.ident
                            ),
                        );
                        continue;
                    }
                    check_fields(
                        &input.ident,
                        &variant.fields,
                        false,
                        &mut assertions,
                        &mut errors,
                    );
                }
            }
            Data::Union(data) => errors.spanned(
                data.union_token,
                "`StrictCompatible` cannot be derived for a union; serde has no schema for it",
            ),
        }
    }
    errors.finish(())?;
    Ok(impls(input, is_object, &assertions))
}

fn impls(input: &DeriveInput, is_object: bool, assertions: &[TokenStream]) -> TokenStream {
    let name = &input.ident;
    let mut generics = input.generics.clone();
    let type_params: Vec<Ident> = generics.type_params().map(|p| p.ident.clone()).collect();
    let where_clause = generics.make_where_clause();
    for param in type_params {
        where_clause
            .predicates
            .push(syn::parse_quote!(#param: ::intent_rs::StrictCompatible));
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let object = is_object.then(|| {
        quote!(impl #impl_generics ::intent_rs::strict::StrictObject for #name #ty_generics #where_clause {})
    });
    quote! {
        impl #impl_generics ::intent_rs::StrictCompatible for #name #ty_generics #where_clause {}
        #object
        const _: () = {
            // Never called: the bounds inside are the check, and each error lands on the
            // field type it is about.
            #[allow(dead_code)]
            fn assert_fields_are_strict #impl_generics () #where_clause {
                #(#assertions)*
            }
        };
    }
}

fn check_fields(
    name: &Ident,
    fields: &Fields,
    transparent: bool,
    assertions: &mut Vec<TokenStream>,
    errors: &mut Errors,
) {
    if let Fields::Unnamed(unnamed) = fields {
        let kept = unnamed
            .unnamed
            .iter()
            .filter(|f| !member_attrs(&f.attrs).skipped)
            .count();
        if kept > 1 && !transparent {
            errors.spanned(
                unnamed,
                "a tuple has no strict schema (it is an array of positional items, which strict modes reject); use named fields",
            );
            return;
        }
    }
    for field in fields {
        check_field(name, field, assertions, errors);
    }
}

fn check_field(
    name: &Ident,
    field: &Field,
    assertions: &mut Vec<TokenStream>,
    errors: &mut Errors,
) {
    let attrs = member_attrs(&field.attrs);
    if attrs.skipped {
        return;
    }
    let ty = attrs.with.as_ref().unwrap_or(&field.ty);
    if names_type(ty, name) {
        errors.spanned(
            ty,
            format!(
                "`{name}` contains itself, and a recursive type cannot be made strict (its schema never ends); bound the depth with separate types, or return `serde_json::Value` with a runtime schema, or use `json_mode`"
            ),
        );
        return;
    }
    assertions.push(if attrs.flatten {
        quote_spanned!(ty.span()=> ::intent_rs::__private::assert_flatten::<#ty>();)
    } else {
        assert_strict(ty)
    });
}

/// The assertion that `ty` is strict-compatible, spanned on it. A type naming chrono's
/// dates or times, or `Uuid`, is asked through the function of its feature, so that
/// without the feature the error names it.
pub(crate) fn assert_strict(ty: &Type) -> TokenStream {
    let function = match feature_gated(ty) {
        Some(Gated::Chrono) => quote!(assert_strict_chrono),
        Some(Gated::Uuid) => quote!(assert_strict_uuid),
        None => quote!(assert_strict),
    };
    quote_spanned!(ty.span()=> ::intent_rs::__private::#function::<#ty>();)
}

/// A family of types that is strict-compatible only with a feature of intent-rs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gated {
    /// chrono's dates and times (`chrono`).
    Chrono,
    /// `uuid::Uuid` (`uuid`).
    Uuid,
}

/// Which feature-gated family `ty` names, if any: a path through `chrono::`, or chrono's
/// date and time names, or `Uuid`. A derive sees names only, so a type of the user's own
/// with such a name is asked the same bound; only the wording of its error differs.
fn feature_gated(ty: &Type) -> Option<Gated> {
    struct Finder(Option<Gated>);
    impl<'ast> Visit<'ast> for Finder {
        fn visit_path(&mut self, path: &'ast syn::Path) {
            let names: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            let last = names.last().map(String::as_str);
            if names.iter().any(|name| name == "chrono")
                || matches!(
                    last,
                    Some("NaiveDate" | "NaiveTime" | "NaiveDateTime" | "DateTime")
                )
            {
                self.0.get_or_insert(Gated::Chrono);
            } else if names.iter().any(|name| name == "uuid") || last == Some("Uuid") {
                self.0.get_or_insert(Gated::Uuid);
            }
            syn::visit::visit_path(self, path);
        }
    }
    let mut finder = Finder(None);
    finder.visit_type(ty);
    finder.0
}

fn newtype(fields: &Fields) -> bool {
    matches!(fields, Fields::Unnamed(unnamed) if unnamed.unnamed.len() == 1)
}

/// Whether `ty` mentions the type `name` (or `Self`) anywhere.
fn names_type(ty: &Type, name: &Ident) -> bool {
    struct Finder<'a> {
        name: &'a Ident,
        found: bool,
    }
    impl<'ast> Visit<'ast> for Finder<'_> {
        fn visit_type_path(&mut self, path: &'ast syn::TypePath) {
            let is_self = path.qself.is_none()
                && path
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == *self.name || s.ident == "Self");
            self.found |= is_self;
            syn::visit::visit_type_path(self, path);
        }
    }
    let mut finder = Finder { name, found: false };
    finder.visit_type(ty);
    finder.found
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
    fn recursion_through_wrappers_is_rejected() {
        let error = derive("struct Node { children: Vec<Option<Box<Node>>> }").unwrap_err();
        assert!(error.starts_with("`Node` contains itself"), "{error}");
        assert!(derive("struct Node { next: Box<Self> }").is_err());
    }

    #[test]
    fn skipped_fields_are_not_checked_but_skip_serializing_ones_are() {
        let out = derive("struct A { #[serde(skip)] a: HashMap<String, u8>, #[serde(rename = \"x\", skip_serializing)] b: u8 }").unwrap();
        assert!(!out.contains("HashMap"), "{out}");
        assert!(out.contains("assert_strict :: < u8 >"), "{out}");
    }

    #[test]
    fn unknown_serde_attributes_are_ignored() {
        assert!(derive("#[serde(rename_all = \"camelCase\", deny_unknown_fields, bound(deserialize = \"\"))] struct A { #[serde(default, with = \"m\")] a: u8 }").is_ok());
    }

    #[test]
    fn internally_tagged_newtype_variants_are_rejected_but_struct_variants_pass() {
        let error =
            derive("#[serde(tag = \"kind\")] enum E { A(Inner), B { x: u8 } }").unwrap_err();
        assert!(error.contains("`E::A` cannot be made strict"), "{error}");
        assert!(derive("#[serde(tag = \"kind\", content = \"c\")] enum E { A(Inner) }").is_ok());
        assert!(derive("#[serde(untagged)] enum E { A(Inner), B { x: u8 } }").is_ok());
    }

    #[test]
    fn tuples_with_several_fields_are_rejected() {
        assert!(derive("struct P(u8, u8);").is_err());
        assert!(derive("enum E { P(u8, u8) }").is_err());
        assert!(derive("struct Id(String);").is_ok());
    }

    #[test]
    fn only_named_structs_can_be_flattened() {
        let out = derive("struct A { #[serde(flatten)] b: B }").unwrap();
        assert!(out.contains("assert_flatten :: < B >"), "{out}");
        assert!(out.contains("StrictObject for A"), "{out}");
        assert!(!derive("enum E { X }").unwrap().contains("StrictObject"));
    }

    #[test]
    fn schemars_with_checks_the_replacement_type() {
        let out = derive("struct A { #[schemars(with = \"String\")] at: Timestamp }").unwrap();
        assert!(
            out.contains("assert_strict :: < String >") && !out.contains("Timestamp >"),
            "{out}"
        );
    }

    #[test]
    fn chrono_and_uuid_fields_are_asked_through_their_features_check() {
        let out = derive(
            "struct A { at: chrono::NaiveDate, when: Option<DateTime<Utc>>, id: Uuid, n: u8 }",
        )
        .unwrap();
        assert!(
            out.contains("assert_strict_chrono :: < chrono :: NaiveDate >"),
            "{out}"
        );
        assert!(
            out.contains("assert_strict_chrono :: < Option < DateTime < Utc > > >"),
            "{out}"
        );
        assert!(out.contains("assert_strict_uuid :: < Uuid >"), "{out}");
        assert!(out.contains("assert_strict :: < u8 >"), "{out}");
    }

    #[test]
    fn all_errors_are_reported_together() {
        let error = derive("enum E { A(u8, u8), B(Box<E>) }").unwrap_err();
        let input: DeriveInput = syn::parse_str("enum E { A(u8, u8), B(Box<E>) }").unwrap();
        assert_eq!(
            expand(&input).unwrap_err().into_iter().count(),
            2,
            "{error}"
        );
    }
}
