//! Parsing of the method attributes (`#[intent]`, `#[guardrail]`, `#[validate]`,
//! `#[example]`, `#[system]`, `#[output]`), with every keyword named in one place.

use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Attribute, Expr, ExprLit, Ident, Lit, LitStr, Token};

use crate::ctxt::Errors;

/// The attribute names this macro consumes; any other attribute stays on the method.
pub(crate) mod name {
    pub(crate) const INTENT: &str = "intent";
    pub(crate) const GUARDRAIL: &str = "guardrail";
    pub(crate) const VALIDATE: &str = "validate";
    pub(crate) const EXAMPLE: &str = "example";
    pub(crate) const SYSTEM: &str = "system";
    pub(crate) const OUTPUT: &str = "output";

    pub(crate) const ALL: [&str; 6] = [INTENT, GUARDRAIL, VALIDATE, EXAMPLE, SYSTEM, OUTPUT];
}

/// Options of `#[intent("...", ...)]`.
mod intent_option {
    pub(crate) const MODEL: &str = "model";
    pub(crate) const MAX_ATTEMPTS: &str = "max_attempts";
    pub(crate) const TEMPERATURE: &str = "temperature";
    pub(crate) const SCHEMA: &str = "schema";
    pub(crate) const JSON_MODE: &str = "json_mode";
    pub(crate) const RECOVER_ANSWER: &str = "recover_answer";
    pub(crate) const PROVIDER: &str = "provider";

    pub(crate) const ALL: [&str; 7] = [
        MODEL,
        MAX_ATTEMPTS,
        TEMPERATURE,
        SCHEMA,
        JSON_MODE,
        RECOVER_ANSWER,
        PROVIDER,
    ];
}

/// Keys of `#[guardrail(...)]`.
mod guardrail_key {
    pub(crate) const REQUIRE_JUDGE: &str = "require_judge";
    pub(crate) const MAX_MODEL_CALLS: &str = "max_model_calls";
    pub(crate) const TIME_BUDGET_MS: &str = "time_budget_ms";
    pub(crate) const MAX_COST: &str = "max_cost";

    pub(crate) const ALL: [&str; 4] = [REQUIRE_JUDGE, MAX_MODEL_CALLS, TIME_BUDGET_MS, MAX_COST];
}

/// Keys of `#[example(...)]`.
mod example_key {
    pub(crate) const INPUT: &str = "input";
    pub(crate) const OUTPUT: &str = "output";

    pub(crate) const ALL: [&str; 2] = [INPUT, OUTPUT];
}

/// Whether `attr` is one of ours.
pub(crate) fn is_intent_attr(attr: &Attribute) -> bool {
    name::ALL.iter().any(|name| attr.path().is_ident(name))
}

/// `#[intent("...", options)]`.
pub(crate) struct Intent {
    pub text: LitStr,
    pub model: Option<LitStr>,
    pub max_attempts: Option<u32>,
    pub temperature: Option<f32>,
    pub schema: Option<LitStr>,
    pub json_mode: Option<Ident>,
    /// `recover_answer` (on) or `recover_answer = true/false`, with the key for errors.
    pub recover_answer: Option<(Ident, bool)>,
    /// `provider = "cheap"`: the client's named provider the method's calls go to.
    pub provider: Option<LitStr>,
}

/// The merged `#[guardrail(...)]` attributes of one method.
#[derive(Default)]
pub(crate) struct Guardrails {
    pub require_judge: Option<Ident>,
    pub max_model_calls: Option<u32>,
    pub time_budget_ms: Option<u64>,
    /// The budget in money, in pico-dollars (read exactly from the literal).
    pub max_cost: Option<u64>,
}

/// `#[example(input = "...", output = "...")]`.
pub(crate) struct ExampleAttr {
    pub input: LitStr,
    pub output: LitStr,
}

/// Every attribute of one method, ours parsed and the others kept.
#[derive(Default)]
pub(crate) struct MethodAttrs {
    pub intent: Option<Intent>,
    pub guardrails: Guardrails,
    pub validators: Vec<syn::Path>,
    pub examples: Vec<ExampleAttr>,
    pub system: Option<LitStr>,
    pub output: Option<LitStr>,
    /// Attributes that are not ours (docs, `cfg`, lints), copied to the generated items.
    pub kept: Vec<Attribute>,
    /// Whether an `#[intent]` attribute was written, even one too broken to read (its
    /// error is reported already; saying it is missing would be wrong).
    pub has_intent_attr: bool,
}

/// One argument of an attribute list: a bare string, another literal (always a mistake,
/// read so that it can be named), a flag, or `name = value`.
enum Arg {
    Text(LitStr),
    OtherLit(Lit),
    Flag(Ident),
    Named(Ident, Expr),
}

impl Parse for Arg {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.peek(LitStr) {
            return input.parse().map(Arg::Text);
        }
        if input.peek(Lit) {
            return input.parse().map(Arg::OtherLit);
        }
        let name: Ident = input.call(syn::ext::IdentExt::parse_any)?;
        if input.peek(Token![=]) {
            input.parse::<Token![=]>()?;
            Ok(Arg::Named(name, input.parse()?))
        } else {
            Ok(Arg::Flag(name))
        }
    }
}

fn parse_args(attr: &Attribute, usage: &str) -> syn::Result<Punctuated<Arg, Token![,]>> {
    match &attr.meta {
        syn::Meta::List(list) => list.parse_args_with(Punctuated::parse_terminated),
        _ => Err(syn::Error::new_spanned(
            attr,
            format!("expected a list of arguments, like `{usage}`"),
        )),
    }
}

/// Reads every attribute of a method, recording each mistake in `errors`.
pub(crate) fn parse_method_attrs(attrs: &[Attribute], errors: &mut Errors) -> MethodAttrs {
    let mut parsed = MethodAttrs::default();
    for attr in attrs {
        let path = attr.path();
        if path.is_ident(name::INTENT) {
            parsed.has_intent_attr = true;
            if parsed.intent.is_some() {
                errors.spanned(
                    attr,
                    "duplicate `#[intent]` attribute; a method states one intent",
                );
            } else {
                parsed.intent = parse_intent(attr, errors);
            }
        } else if path.is_ident(name::GUARDRAIL) {
            parse_guardrail(attr, &mut parsed.guardrails, errors);
        } else if path.is_ident(name::VALIDATE) {
            parse_validate(attr, &mut parsed.validators, errors);
        } else if path.is_ident(name::EXAMPLE) {
            parsed.examples.extend(parse_example(attr, errors));
        } else if path.is_ident(name::SYSTEM) {
            set_text(
                attr,
                name::SYSTEM,
                "#[system(\"Answer in French\")]",
                &mut parsed.system,
                errors,
            );
        } else if path.is_ident(name::OUTPUT) {
            set_text(
                attr,
                name::OUTPUT,
                "#[output(\"At most 20 words\")]",
                &mut parsed.output,
                errors,
            );
        } else {
            parsed.kept.push(attr.clone());
        }
    }
    parsed
}

fn parse_intent(attr: &Attribute, errors: &mut Errors) -> Option<Intent> {
    let args = errors.ok(parse_args(attr, "#[intent(\"Summarize the text\")]"))?;
    let mut args = args.into_iter();
    let text = match args.next() {
        Some(Arg::Text(text)) => text,
        Some(Arg::OtherLit(lit)) => {
            errors.spanned(
                lit,
                "the intent must be a string literal, like `#[intent(\"Summarize the text\")]`",
            );
            return None;
        }
        _ => {
            errors.spanned(
                attr,
                "`#[intent]` needs the intent text first, like `#[intent(\"Summarize the text\")]`",
            );
            return None;
        }
    };
    let mut intent = Intent {
        text,
        model: None,
        max_attempts: None,
        temperature: None,
        schema: None,
        json_mode: None,
        recover_answer: None,
        provider: None,
    };
    for arg in args {
        let (key, value) = match arg {
            Arg::Text(text) => {
                errors.spanned(
                    &text,
                    "the intent text is given once, as the first argument of `#[intent]`",
                );
                continue;
            }
            Arg::OtherLit(lit) => {
                errors.spanned(
                    lit,
                    "expected an intent option, like `model = \"gpt-4o-mini\"`",
                );
                continue;
            }
            Arg::Flag(key) => (key, None),
            Arg::Named(key, value) => (key, Some(value)),
        };
        let name = key.to_string();
        match name.as_str() {
            intent_option::MODEL => {
                let value = lit_str(&key, value, "model = \"gpt-4o-mini\"", errors);
                set_once(&mut intent.model, value, &key, "intent option", errors);
            }
            intent_option::MAX_ATTEMPTS => {
                let value = lit_count(&key, value, "max_attempts = 3", errors);
                set_once(
                    &mut intent.max_attempts,
                    value,
                    &key,
                    "intent option",
                    errors,
                );
            }
            intent_option::TEMPERATURE => {
                let value = lit_temperature(&key, value, errors);
                set_once(
                    &mut intent.temperature,
                    value,
                    &key,
                    "intent option",
                    errors,
                );
            }
            intent_option::SCHEMA => {
                let value = lit_str(&key, value, "schema = \"schemas/order.json\"", errors);
                set_once(&mut intent.schema, value, &key, "intent option", errors);
            }
            intent_option::JSON_MODE => {
                let value = flag(&key, value, errors);
                set_once(&mut intent.json_mode, value, &key, "intent option", errors);
            }
            intent_option::RECOVER_ANSWER => {
                let value = switch(&key, value, errors).map(|on| (key.clone(), on));
                set_once(
                    &mut intent.recover_answer,
                    value,
                    &key,
                    "intent option",
                    errors,
                );
            }
            intent_option::PROVIDER => {
                let value = lit_str(&key, value, "provider = \"cheap\"", errors).filter(|name| {
                    let empty = name.value().trim().is_empty();
                    if empty {
                        errors.spanned(
                            name,
                            "`provider` names one of the client's providers (given with \
                             `IntentClient::builder().provider_named(\"cheap\", ...)`); it cannot be empty",
                        );
                    }
                    !empty
                });
                set_once(&mut intent.provider, value, &key, "intent option", errors);
            }
            _ if guardrail_key::ALL.contains(&name.as_str()) => errors.spanned(
                &key,
                format!(
                    "`{name}` is a guardrail, not an intent option; move it to `#[guardrail({})]`",
                    usage_of(&name, value.as_ref())
                ),
            ),
            _ => errors.spanned(&key, unknown("intent option", &name, &intent_option::ALL)),
        }
    }
    Some(intent)
}

fn parse_guardrail(attr: &Attribute, guardrails: &mut Guardrails, errors: &mut Errors) {
    let Some(args) = errors.ok(parse_args(attr, "#[guardrail(require_judge)]")) else {
        return;
    };
    for arg in args {
        let (key, value) = match arg {
            Arg::Text(_) | Arg::OtherLit(_) => {
                let span = match &arg {
                    Arg::Text(text) => text.span(),
                    Arg::OtherLit(lit) => lit.span(),
                    Arg::Flag(_) | Arg::Named(..) => continue,
                };
                errors.at(
                    span,
                    format!(
                        "expected a guardrail name; expected one of {}",
                        list(&guardrail_key::ALL)
                    ),
                );
                continue;
            }
            Arg::Flag(key) => (key, None),
            Arg::Named(key, value) => (key, Some(value)),
        };
        let name = key.to_string();
        match name.as_str() {
            guardrail_key::REQUIRE_JUDGE => {
                let value = flag(&key, value, errors);
                set_once(
                    &mut guardrails.require_judge,
                    value,
                    &key,
                    "guardrail",
                    errors,
                );
            }
            guardrail_key::MAX_MODEL_CALLS => {
                let value = lit_count(&key, value, "max_model_calls = 4", errors);
                set_once(
                    &mut guardrails.max_model_calls,
                    value,
                    &key,
                    "guardrail",
                    errors,
                );
            }
            guardrail_key::TIME_BUDGET_MS => {
                let value = lit_count(&key, value, "time_budget_ms = 30000", errors);
                set_once(
                    &mut guardrails.time_budget_ms,
                    value,
                    &key,
                    "guardrail",
                    errors,
                );
            }
            guardrail_key::MAX_COST => {
                let value = lit_cost(&key, value, errors);
                set_once(&mut guardrails.max_cost, value, &key, "guardrail", errors);
            }
            _ if intent_option::ALL.contains(&name.as_str()) => errors.spanned(
                &key,
                format!(
                    "`{name}` is an intent option, not a guardrail; move it to `#[intent(\"...\", {})]`",
                    usage_of(&name, value.as_ref())
                ),
            ),
            _ => errors.spanned(&key, unknown("guardrail", &name, &guardrail_key::ALL)),
        }
    }
}

fn parse_validate(attr: &Attribute, validators: &mut Vec<syn::Path>, errors: &mut Errors) {
    let parsed = match &attr.meta {
        syn::Meta::List(list) => {
            list.parse_args_with(Punctuated::<syn::Path, Token![,]>::parse_terminated)
        }
        _ => Err(syn::Error::new_spanned(attr, "")),
    };
    match parsed {
        Ok(paths) if !paths.is_empty() => validators.extend(paths),
        _ => errors.spanned(
            attr,
            "`#[validate]` takes the path of a validator function, like `#[validate(totals_add_up)]`",
        ),
    }
}

fn parse_example(attr: &Attribute, errors: &mut Errors) -> Option<ExampleAttr> {
    const USAGE: &str = "#[example(input = \"...\", output = \"...\")]";
    let args = errors.ok(parse_args(attr, USAGE))?;
    let (mut input, mut output) = (None, None);
    for arg in args {
        let Arg::Named(key, value) = arg else {
            errors.spanned(
                attr,
                format!("`#[example]` takes `input` and `output` strings, like `{USAGE}`"),
            );
            continue;
        };
        let name = key.to_string();
        let slot = match name.as_str() {
            example_key::INPUT => &mut input,
            example_key::OUTPUT => &mut output,
            _ => {
                errors.spanned(&key, unknown("example key", &name, &example_key::ALL));
                continue;
            }
        };
        let value = lit_str(&key, Some(value), &format!("{name} = \"...\""), errors);
        set_once(slot, value, &key, "example key", errors);
    }
    match (input, output) {
        (Some(input), Some(output)) => Some(ExampleAttr { input, output }),
        (input, _) => {
            let missing = if input.is_none() {
                example_key::INPUT
            } else {
                example_key::OUTPUT
            };
            errors.spanned(
                attr,
                format!("`#[example]` is missing `{missing}`; write `{USAGE}`"),
            );
            None
        }
    }
}

fn set_text(
    attr: &Attribute,
    name: &str,
    usage: &str,
    slot: &mut Option<LitStr>,
    errors: &mut Errors,
) {
    if slot.is_some() {
        errors.spanned(
            attr,
            format!("duplicate `#[{name}]` attribute; write all of it in one string"),
        );
        return;
    }
    match attr.parse_args::<LitStr>() {
        Ok(text) => *slot = Some(text),
        Err(_) => errors.spanned(
            attr,
            format!("`#[{name}]` takes one string literal, like `{usage}`"),
        ),
    }
}

/// Stores `value` unless the key was given already.
fn set_once<T>(
    slot: &mut Option<T>,
    value: Option<T>,
    key: &Ident,
    kind: &str,
    errors: &mut Errors,
) {
    if slot.is_some() {
        errors.spanned(key, format!("duplicate {kind} `{key}`; give it once"));
    } else if value.is_some() {
        *slot = value;
    }
}

fn literal(value: &Expr) -> Option<&Lit> {
    match value {
        Expr::Lit(ExprLit { lit, .. }) => Some(lit),
        _ => None,
    }
}

fn lit_str(key: &Ident, value: Option<Expr>, usage: &str, errors: &mut Errors) -> Option<LitStr> {
    match value.as_ref().and_then(literal) {
        Some(Lit::Str(text)) => Some(text.clone()),
        _ => {
            let message = format!("`{key}` expects a string literal, like `{usage}`");
            match value {
                Some(value) => errors.spanned(value, message),
                None => errors.spanned(key, message),
            }
            None
        }
    }
}

/// A positive integer literal (attempts, calls, milliseconds).
fn lit_count<N>(key: &Ident, value: Option<Expr>, usage: &str, errors: &mut Errors) -> Option<N>
where
    N: std::str::FromStr + PartialEq + From<u8>,
    N::Err: std::fmt::Display,
{
    let message = format!("`{key}` expects a positive integer literal, like `{usage}`");
    let Some(value) = value else {
        errors.spanned(key, message);
        return None;
    };
    let Some(Lit::Int(int)) = literal(&value) else {
        errors.spanned(value, message);
        return None;
    };
    match int.base10_parse::<N>() {
        Ok(n) if n != N::from(0) => Some(n),
        Ok(_) => {
            errors.spanned(int, format!("`{key}` must be at least 1"));
            None
        }
        Err(error) => {
            errors.spanned(int, format!("`{key}` is out of range: {error}"));
            None
        }
    }
}

/// `max_cost = 0.05` or `max_cost = "$0.05"`: US dollars, read exactly from the
/// literal's text (never through a float) into pico-dollars, as `intent_rs::Cost` holds
/// them.
fn lit_cost(key: &Ident, value: Option<Expr>, errors: &mut Errors) -> Option<u64> {
    let message = format!(
        "`{key}` expects an amount of US dollars with at most 12 decimals, like `{key} = 0.05` or `{key} = \"$0.05\"`"
    );
    let Some(value) = value else {
        errors.spanned(key, message);
        return None;
    };
    let text = match literal(&value) {
        Some(Lit::Float(float)) if float.suffix().is_empty() => float.base10_digits().to_owned(),
        Some(Lit::Int(int)) if int.suffix().is_empty() => int.base10_digits().to_owned(),
        Some(Lit::Str(text)) => text.value(),
        _ => {
            errors.spanned(value, message);
            return None;
        }
    };
    match pico_dollars(&text) {
        Some(0) => {
            errors.spanned(
                value,
                format!("`{key}` must be more than 0: a budget of nothing sends nothing"),
            );
            None
        }
        Some(picos) => Some(picos),
        None => {
            errors.spanned(value, message);
            None
        }
    }
}

/// `0.05`, `$0.05` or `12` as pico-dollars; `None` for anything else (an exponent, a
/// sign, more than 12 decimals, an amount past `u64`).
fn pico_dollars(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits = text.strip_prefix('$').unwrap_or(text);
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty())
        || !all_digits(whole)
        || !all_digits(fraction)
        || fraction.len() > 12
    {
        return None;
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let fraction: u64 = if fraction.is_empty() {
        0
    } else {
        format!("{fraction:0<12}").parse().ok()?
    };
    whole.checked_mul(1_000_000_000_000)?.checked_add(fraction)
}

fn lit_temperature(key: &Ident, value: Option<Expr>, errors: &mut Errors) -> Option<f32> {
    let message = format!("`{key}` expects a number literal, like `{key} = 0.2`");
    let Some(value) = value else {
        errors.spanned(key, message);
        return None;
    };
    let parsed = match literal(&value) {
        Some(Lit::Float(float)) => float.base10_parse::<f32>().ok(),
        Some(Lit::Int(int)) => int.base10_parse::<f32>().ok(),
        _ => None,
    };
    match parsed {
        Some(t) if t.is_finite() && (0.0..=2.0).contains(&t) => Some(t),
        Some(_) => {
            errors.spanned(value, format!("`{key}` must be between 0.0 and 2.0"));
            None
        }
        None => {
            errors.spanned(value, message);
            None
        }
    }
}

fn flag(key: &Ident, value: Option<Expr>, errors: &mut Errors) -> Option<Ident> {
    match value {
        None => Some(key.clone()),
        Some(value) => {
            errors.spanned(value, format!("`{key}` takes no value; write just `{key}`"));
            None
        }
    }
}

/// A switch: the bare key turns it on, `key = true` / `key = false` say which.
fn switch(key: &Ident, value: Option<Expr>, errors: &mut Errors) -> Option<bool> {
    let Some(value) = value else {
        return Some(true);
    };
    match literal(&value) {
        Some(Lit::Bool(on)) => Some(on.value),
        _ => {
            errors.spanned(
                value,
                format!("`{key}` expects `true` or `false`, like `{key} = true` (or just `{key}`)"),
            );
            None
        }
    }
}

/// `name = value` as written, or `name` for a flag, for a message that says where it goes.
fn usage_of(name: &str, value: Option<&Expr>) -> String {
    match value {
        Some(value) => format!("{name} = {}", quote::ToTokens::to_token_stream(value)),
        None => name.to_owned(),
    }
}

/// The message for an unknown `name` of some `kind`: the nearest known name when one is
/// close enough to be a slip of the keyboard, otherwise every known name.
fn unknown(kind: &str, name: &str, known: &[&str]) -> String {
    match nearest(name, known) {
        Some(nearest) => format!("unknown {kind} `{name}`; did you mean `{nearest}`?"),
        None => format!("unknown {kind} `{name}`; expected one of {}", list(known)),
    }
}

/// The known name within a small edit distance of `name` (a missing, extra, changed or
/// swapped letter or two), the nearest first.
fn nearest<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
    // A third of the name's length, at least one edit and at most three: `modle` finds
    // `model`, while a short unrelated word does not match everything.
    let allowed = (name.chars().count() / 3).clamp(1, 3);
    known
        .iter()
        .map(|candidate| (strsim::damerau_levenshtein(name, candidate), *candidate))
        .filter(|(distance, _)| *distance <= allowed)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

fn list(names: &[&str]) -> String {
    names
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(attrs: &[Attribute]) -> (MethodAttrs, Result<(), String>) {
        let mut errors = Errors::default();
        let parsed = parse_method_attrs(attrs, &mut errors);
        (parsed, errors.finish(()).map_err(|e| e.to_string()))
    }

    #[test]
    fn guardrails_merge_across_attributes_and_others_are_kept() {
        let (parsed, result) = parse(&[
            syn::parse_quote!(#[guardrail(require_judge)]),
            syn::parse_quote!(#[doc = " kept"]),
            syn::parse_quote!(#[guardrail(max_model_calls = 4, time_budget_ms = 1500)]),
            syn::parse_quote!(#[validate(a, b::c)]),
            syn::parse_quote!(#[validate(d)]),
        ]);
        result.unwrap();
        assert!(parsed.guardrails.require_judge.is_some());
        assert_eq!(parsed.guardrails.max_model_calls, Some(4));
        assert_eq!(parsed.guardrails.time_budget_ms, Some(1500));
        assert_eq!(parsed.validators.len(), 3);
        assert_eq!(parsed.kept.len(), 1);
    }

    #[test]
    fn a_money_budget_is_read_exactly_from_a_number_or_a_string() {
        for (attr, picos) in [
            (
                syn::parse_quote!(#[guardrail(max_cost = 0.05)]),
                50_000_000_000,
            ),
            (
                syn::parse_quote!(#[guardrail(max_cost = "$1.5")]),
                1_500_000_000_000,
            ),
            (
                syn::parse_quote!(#[guardrail(max_cost = 2)]),
                2_000_000_000_000,
            ),
        ] {
            let (parsed, result) = parse(&[attr]);
            result.unwrap();
            assert_eq!(parsed.guardrails.max_cost, Some(picos));
        }
        let (_, result) = parse(&[syn::parse_quote!(#[guardrail(max_cost = 1e-3)])]);
        assert!(
            result
                .unwrap_err()
                .starts_with("`max_cost` expects an amount of US dollars")
        );
        let (_, result) = parse(&[syn::parse_quote!(#[guardrail(max_cost = "0.0")])]);
        assert!(
            result
                .unwrap_err()
                .starts_with("`max_cost` must be more than 0")
        );
    }

    #[test]
    fn a_guardrail_repeated_in_another_attribute_is_a_duplicate() {
        let (_, result) = parse(&[
            syn::parse_quote!(#[guardrail(max_model_calls = 4)]),
            syn::parse_quote!(#[guardrail(max_model_calls = 5)]),
        ]);
        assert_eq!(
            result.unwrap_err(),
            "duplicate guardrail `max_model_calls`; give it once"
        );
    }

    #[test]
    fn intent_options_read_their_literals() {
        let (parsed, result) = parse(&[syn::parse_quote!(
            #[intent("Do it", model = "m", max_attempts = 2, temperature = 1, schema = "s.json", json_mode)]
        )]);
        result.unwrap();
        let intent = parsed.intent.unwrap();
        assert_eq!(intent.text.value(), "Do it");
        assert_eq!(intent.model.unwrap().value(), "m");
        assert_eq!(intent.max_attempts, Some(2));
        assert_eq!(intent.temperature, Some(1.0));
        assert_eq!(intent.schema.unwrap().value(), "s.json");
        assert!(intent.json_mode.is_some());
    }

    #[test]
    fn a_temperature_out_of_range_is_refused() {
        let (_, result) = parse(&[syn::parse_quote!(#[intent("Do it", temperature = 3.5)])]);
        assert_eq!(
            result.unwrap_err(),
            "`temperature` must be between 0.0 and 2.0"
        );
    }

    #[test]
    fn recover_answer_is_a_switch_on_alone_or_set_by_a_bool() {
        let on = |attr: Attribute| {
            let (parsed, result) = parse(&[attr]);
            result.map(|()| {
                parsed
                    .intent
                    .and_then(|i| i.recover_answer)
                    .map(|(_, on)| on)
            })
        };
        assert_eq!(
            on(syn::parse_quote!(#[intent("Do it", recover_answer)])),
            Ok(Some(true))
        );
        assert_eq!(
            on(syn::parse_quote!(#[intent("Do it", recover_answer = false)])),
            Ok(Some(false))
        );
        assert_eq!(on(syn::parse_quote!(#[intent("Do it")])), Ok(None));
        assert_eq!(
            on(syn::parse_quote!(#[intent("Do it", recover_answer = 1)])).unwrap_err(),
            "`recover_answer` expects `true` or `false`, like `recover_answer = true` (or just `recover_answer`)"
        );
    }

    #[test]
    fn a_misspelled_name_finds_the_nearest_known_one() {
        assert_eq!(
            nearest("temprature", &intent_option::ALL),
            Some("temperature")
        );
        assert_eq!(nearest("modle", &intent_option::ALL), Some("model"));
        assert_eq!(
            nearest("max_attempt", &intent_option::ALL),
            Some("max_attempts")
        );
        assert_eq!(
            nearest("require_jugde", &guardrail_key::ALL),
            Some("require_judge")
        );
        assert_eq!(nearest("cache", &intent_option::ALL), None);
        assert_eq!(nearest("x", &guardrail_key::ALL), None);
    }
}
