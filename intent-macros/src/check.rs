//! Checks across a method's attributes and its target type, and the compile-time reading
//! of runtime schema files.

use std::path::PathBuf;

use syn::LitStr;

use crate::attr;
use crate::ctxt::Errors;
use crate::model::{IntentMethod, IntentTrait, SchemaFile, TargetKind};

/// Checks every method, recording each mistake and loading schema files.
pub(crate) fn check(model: &mut IntentTrait<'_>, errors: &mut Errors) {
    for method in &mut model.methods {
        check_method(method, errors);
    }
    check_batch_names(model, errors);
}

/// A trait method named like another's batch companion (`<method>_batch_item`) would be
/// shadowed by it on the client.
fn check_batch_names(model: &IntentTrait<'_>, errors: &mut Errors) {
    let companions: Vec<(syn::Ident, &syn::Ident)> = model
        .methods
        .iter()
        .filter(|method| crate::model::batchable(method))
        .map(|method| {
            let ident = &method.item.sig.ident;
            (crate::model::batch_item_name(ident), ident)
        })
        .collect();
    for item in &model.item.items {
        if let syn::TraitItem::Fn(function) = item {
            let ident = &function.sig.ident;
            if let Some((_, owner)) = companions.iter().find(|(name, _)| name == ident) {
                errors.spanned(
                    ident,
                    format!(
                        "`{ident}` is the name of the batch companion the client generates for `{owner}`; rename this method"
                    ),
                );
            }
        }
    }
}

fn check_method(method: &mut IntentMethod<'_>, errors: &mut Errors) {
    let kind = method.output.kind;
    if let TargetKind::Decision(_) = kind {
        check_decision(method, errors);
        return;
    }
    if let Some(json_mode) = &method.intent.json_mode {
        match kind {
            TargetKind::Text => errors.spanned(
                json_mode,
                "`json_mode` does not apply to a `String` target, which is asked for as plain text",
            ),
            TargetKind::Value => errors.spanned(
                json_mode,
                "`json_mode` does not apply to a `serde_json::Value` target: without `schema` it is asked for as a JSON object already",
            ),
            TargetKind::Typed | TargetKind::Decision(_) => {}
        }
    }
    if let Some((recover_answer, _)) = &method.intent.recover_answer
        && kind == TargetKind::Text
    {
        errors.spanned(
            recover_answer,
            "`recover_answer` does not apply to a `String` target: its reply is the text itself, never searched for JSON",
        );
    }
    if let Some(schema) = &method.intent.schema {
        if kind == TargetKind::Value {
            method.schema_file = errors.ok(load_schema(schema));
        } else {
            errors.spanned(
                schema,
                "`schema` applies only to methods returning `serde_json::Value`; a typed target takes its schema from its type",
            );
        }
    }
    if kind != TargetKind::Text {
        for example in &method.attrs.examples {
            if let Err(error) = serde_json::from_str::<serde_json::Value>(&example.output.value()) {
                errors.spanned(
                    &example.output,
                    format!(
                        "this example output is not JSON ({error}); for a non-`String` target write the reply as the model should send it, like `{{\"value\": ...}}`"
                    ),
                );
            }
        }
    }
}

/// Reads `path` relative to the crate's manifest directory and checks it is a JSON object.
fn load_schema(path: &LitStr) -> syn::Result<SchemaFile> {
    let relative = path.value();
    let error = |message: String| syn::Error::new(path.span(), message);
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").ok_or_else(|| {
        error(
            "`CARGO_MANIFEST_DIR` is not set, so the schema file cannot be found; build with cargo"
                .to_owned(),
        )
    })?;
    let absolute = PathBuf::from(manifest_dir).join(&relative);
    let text = std::fs::read_to_string(&absolute).map_err(|io| {
        error(format!(
            "cannot read schema file `{relative}` ({io}); the path is relative to the crate's directory (where its Cargo.toml is)"
        ))
    })?;
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(serde_json::Value::Object(_)) => {}
        Ok(_) => {
            return Err(error(format!(
                "schema file `{relative}` must hold a JSON object (a JSON Schema)"
            )));
        }
        Err(json) => {
            return Err(error(format!(
                "schema file `{relative}` is not valid JSON: {json}"
            )));
        }
    }
    let absolute = absolute
        .to_str()
        .ok_or_else(|| {
            error(format!(
                "the path of schema file `{relative}` is not valid UTF-8"
            ))
        })?
        .to_owned();
    Ok(SchemaFile { absolute })
}

/// A decision question is one request: the attempt loop's options and attributes do not
/// apply to it, and each one present is an error at its token.
fn check_decision(method: &IntentMethod<'_>, errors: &mut Errors) {
    let not_for_decisions = |what: &str| {
        format!(
            "{what} does not apply to a decision question, which is answered in one request with probabilities; a decision question takes `#[intent(\"question\", model = \"...\")]` only"
        )
    };
    for attribute in &method.item.attrs {
        let path = attribute.path();
        if attr::is_intent_attr(attribute) && !path.is_ident(attr::name::INTENT) {
            let name = path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            errors.spanned(attribute, not_for_decisions(&format!("`#[{name}]`")));
        }
    }
    let intent = &method.intent;
    if let Some(schema) = &intent.schema {
        errors.spanned(schema, not_for_decisions("`schema`"));
    }
    if let Some(json_mode) = &intent.json_mode {
        errors.spanned(json_mode, not_for_decisions("`json_mode`"));
    }
    if let Some(provider) = &intent.provider {
        // A decision question goes to the client's decision client, never to a route.
        errors.spanned(provider, not_for_decisions("`provider`"));
    }
    for (set, name) in [
        (intent.max_attempts.is_some(), "`max_attempts`"),
        (intent.temperature.is_some(), "`temperature`"),
    ] {
        if set {
            errors.spanned(&intent.text, not_for_decisions(name));
        }
    }
}
