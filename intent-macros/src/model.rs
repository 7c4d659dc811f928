//! The typed model of an `#[intents]` trait: its intent methods, their inputs and their
//! target types, built from the syntax with every mistake recorded.

use syn::spanned::Spanned;
use syn::{
    FnArg, GenericArgument, Ident, ItemTrait, Pat, PathArguments, ReturnType, TraitItem,
    TraitItemFn, Type,
};

use crate::attr::{self, Intent, MethodAttrs};
use crate::ctxt::Errors;
use crate::decision;

/// A trait and its methods.
pub(crate) struct IntentTrait<'a> {
    pub item: &'a ItemTrait,
    pub methods: Vec<IntentMethod<'a>>,
}

/// One `#[intent]` method.
pub(crate) struct IntentMethod<'a> {
    pub item: &'a TraitItemFn,
    pub intent: Intent,
    pub attrs: MethodAttrs,
    pub inputs: Vec<Input<'a>>,
    pub output: Output<'a>,
    /// The runtime schema file, read and checked by `check`.
    pub schema_file: Option<SchemaFile>,
}

/// A runtime schema file that exists and holds a JSON object.
pub(crate) struct SchemaFile {
    /// The absolute path, for `include_str!` (which also makes cargo rebuild on change).
    pub absolute: String,
}

/// An input parameter.
#[derive(Clone, Copy)]
pub(crate) struct Input<'a> {
    pub name: &'a Ident,
    pub ty: &'a Type,
    /// Images or documents ([`media_shape`]): sent as content parts, not as text.
    pub media: Option<MediaShape>,
}

/// How a parameter holds media.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum MediaShape {
    /// One: `Image`, `&Image`.
    One,
    /// Several, each sent numbered: `Vec<Image>`, `&[Image]`, `&Vec<Image>`, `[Image; N]`.
    List,
    /// One or none: `Option<Image>`, `Option<&Image>`, `&Option<Image>`.
    Optional,
}

/// The shapes a media parameter may take, for the error on any other.
const MEDIA_SHAPES_HELP: &str = "a media parameter is `Image`, `&Image`, `Option<Image>`, `Vec<Image>` or `&[Image]` (the same for `Document`)";

/// How `ty` holds media: `Ok(None)` when it names none, `Err` with a message saying what
/// to write instead when it holds media in a shape that cannot be sent (a list of lists,
/// an optional list, a map of images).
pub(crate) fn media_shape(ty: &Type) -> Result<Option<MediaShape>, String> {
    if is_media_type(ty) {
        return Ok(Some(MediaShape::One));
    }
    if let Some(element) = list_element(ty) {
        if is_media_type(element) {
            return Ok(Some(MediaShape::List));
        }
        if list_element(element).is_some() && mentions_media(element) {
            return Err(format!(
                "a list of lists of media cannot be sent: the model sees one numbered list per parameter; flatten it into one `Vec<Image>`, or take one parameter per group; {MEDIA_SHAPES_HELP}"
            ));
        }
        if option_inner(element).is_some() && mentions_media(element) {
            return Err(format!(
                "a list of optional media cannot be sent: leave the missing ones out of a `Vec<Image>`; {MEDIA_SHAPES_HELP}"
            ));
        }
    }
    if let Some(inner) = option_inner(strip_reference(ty)) {
        if is_media_type(inner) {
            return Ok(Some(MediaShape::Optional));
        }
        if list_element(inner).is_some() && mentions_media(inner) {
            return Err(format!(
                "an optional list of media cannot be sent: take `Vec<Image>` or `&[Image]` instead, which sends nothing when it is empty, as `None` would; {MEDIA_SHAPES_HELP}"
            ));
        }
    }
    if mentions_media(ty) {
        return Err(format!(
            "this parameter holds images or documents in a shape that cannot be sent as content parts: {MEDIA_SHAPES_HELP}; or take one parameter per medium"
        ));
    }
    Ok(None)
}

/// `T` of `Vec<T>`, `&Vec<T>`, `&[T]`, `[T; N]` or `&[T; N]`.
fn list_element(ty: &Type) -> Option<&Type> {
    match strip_reference(ty) {
        Type::Slice(slice) if matches!(ty, Type::Reference(_)) => Some(&slice.elem),
        Type::Array(array) => Some(&array.elem),
        other => generic_argument(other, "Vec"),
    }
}

/// `T` of `Option<T>`.
fn option_inner(ty: &Type) -> Option<&Type> {
    generic_argument(ty, "Option")
}

/// The one type argument of `<name><T>` (by the last path segment, as `std::vec::Vec`).
fn generic_argument<'t>(ty: &'t Type, name: &str) -> Option<&'t Type> {
    let Type::Path(path) = ty else { return None };
    let last = path
        .path
        .segments
        .last()
        .filter(|last| last.ident == name)?;
    let PathArguments::AngleBracketed(arguments) = &last.arguments else {
        return None;
    };
    match arguments.args.iter().collect::<Vec<_>>().as_slice() {
        [GenericArgument::Type(inner)] => Some(inner),
        _ => None,
    }
}

/// `ty` without its references and parentheses.
fn strip_reference(ty: &Type) -> &Type {
    match ty {
        Type::Reference(reference) => strip_reference(&reference.elem),
        Type::Paren(inner) => strip_reference(&inner.elem),
        other => other,
    }
}

/// Whether `ty` names an image or a document anywhere inside it (`HashMap<String,
/// Image>`, `(Image, Image)`, `Box<Image>`).
fn mentions_media(ty: &Type) -> bool {
    match ty {
        Type::Reference(reference) => mentions_media(&reference.elem),
        Type::Paren(inner) => mentions_media(&inner.elem),
        Type::Group(inner) => mentions_media(&inner.elem),
        Type::Slice(slice) => mentions_media(&slice.elem),
        Type::Array(array) => mentions_media(&array.elem),
        Type::Tuple(tuple) => tuple.elems.iter().any(mentions_media),
        // Named as `is_media_type` names them (a user's `Image<T>` is not one).
        Type::Path(_) if is_media_type(ty) => true,
        Type::Path(path) if path.qself.is_none() => {
            path.path
                .segments
                .iter()
                .any(|segment| match &segment.arguments {
                    PathArguments::AngleBracketed(arguments) => {
                        arguments.args.iter().any(|argument| match argument {
                            GenericArgument::Type(inner) => mentions_media(inner),
                            _ => false,
                        })
                    }
                    _ => false,
                })
        }
        _ => false,
    }
}

/// The type names the runtime's media inputs have (`intent_rs::media::{Image, Document}`).
pub(crate) const MEDIA_TYPE_NAMES: &[&str] = &["Image", "Document"];

/// Whether `ty` is a media input: by its last path segment, through references, as a
/// macro can only see names (`Image`, `&Image`, `intent_rs::media::Document`). A user
/// type of the same name is then asked for `AsMedia`, whose error says what happened.
pub(crate) fn is_media_type(ty: &Type) -> bool {
    match ty {
        Type::Reference(reference) => is_media_type(&reference.elem),
        Type::Paren(inner) => is_media_type(&inner.elem),
        Type::Path(path) if path.qself.is_none() => path.path.segments.last().is_some_and(|last| {
            last.arguments.is_empty() && MEDIA_TYPE_NAMES.iter().any(|name| last.ident == name)
        }),
        _ => false,
    }
}

/// What the method returns.
pub(crate) struct Output<'a> {
    pub wrapper: Wrapper,
    /// `T` of `Result<T, IntentError>` / `AIResult<T>`.
    pub target: &'a Type,
    pub kind: TargetKind,
}

/// How the method hands back the call's record.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wrapper {
    /// `Result<T, IntentError>`: the value or the failure summary.
    Result,
    /// `AIResult<T>`: the whole record.
    AIResult,
    /// `IntentStream<T>` from a plain `fn`: the value as it is written, then the record.
    Stream,
}

/// How the target is asked for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum TargetKind {
    /// `String`: plain text, no schema.
    Text,
    /// `serde_json::Value`: a runtime shape, with an optional schema file.
    Value,
    /// Any other type: a strict schema from `schemars`.
    Typed,
    /// `Binary`, `Choice<E>` or `Score<E>` with `DecisionError`: a decision question.
    Decision(decision::DecisionKind),
}

/// The name of a method's batch companion on the client: `<method>_batch_item`.
pub(crate) fn batch_item_name(method: &Ident) -> Ident {
    quote::format_ident!("{}_batch_item", method)
}

/// Whether a method has a batch companion: a call answered once, an intent's or a
/// decision question's. A stream has none: a batch answers whole replies, hours later,
/// so there is nothing to stream.
pub(crate) fn batchable(method: &IntentMethod<'_>) -> bool {
    method.output.wrapper != Wrapper::Stream
}

const RETURN_HELP: &str = "an intent method returns `Result<T, IntentError>` or `AIResult<T>` from an `async fn`, or `IntentStream<T>` from a plain `fn` (written with these names: type aliases cannot be seen by the macro)";

impl<'a> IntentTrait<'a> {
    /// Builds the model, recording every mistake in `errors`.
    pub(crate) fn from_syn(item: &'a ItemTrait, errors: &mut Errors) -> Self {
        let mut model = IntentTrait {
            item,
            methods: Vec::new(),
        };
        if let Some(unsafety) = &item.unsafety {
            errors.spanned(
                unsafety,
                "an `#[intents]` trait cannot be `unsafe`: the generated client cannot promise its safety conditions",
            );
        }
        for trait_item in &item.items {
            match trait_item {
                TraitItem::Fn(method) => {
                    let has_intent = method.attrs.iter().any(|a| a.path().is_ident(attr::name::INTENT));
                    // A method with a body and no `#[intent]` is the user's own: the
                    // client inherits it.
                    let provided = !has_intent && method.default.is_some();
                    if !provided {
                        model.methods.extend(IntentMethod::from_syn(method, errors));
                    }
                }
                other => errors.spanned(
                    other,
                    "an `#[intents]` trait holds only intent methods (and methods with a default body); move this item to another trait",
                ),
            }
        }
        model
    }
}

impl<'a> IntentMethod<'a> {
    fn from_syn(item: &'a TraitItemFn, errors: &mut Errors) -> Option<Self> {
        let mut attrs = attr::parse_method_attrs(&item.attrs, errors);
        let sig = &item.sig;
        check_signature(item, returns_stream(&sig.output), errors);
        let inputs = inputs(item, errors);
        let output = output(&sig.output, errors);
        let Some(intent) = attrs.intent.take() else {
            if attrs.has_intent_attr {
                // The attribute is there but broken; its own error says how.
                return None;
            }
            errors.spanned(
                &sig.ident,
                format!(
                    "method `{}` needs an `#[intent(\"...\")]` attribute saying what the model should do",
                    sig.ident
                ),
            );
            return None;
        };
        let (inputs, output) = (inputs?, output?);
        if matches!(output.kind, TargetKind::Decision(_)) {
            // A decision's requests are built from its state as text (log-probability
            // questions, stated probabilities): there is no content part to put media in.
            for input in inputs.iter().filter(|input| input.media.is_some()) {
                errors.spanned(
                    input.ty,
                    format!(
                        "a decision question cannot take the image or document `{}`: its requests carry text only; return a typed value from an `#[intent]` method instead (an enum for a choice, `bool` for a yes/no)",
                        input.name
                    ),
                );
            }
        }
        Some(IntentMethod {
            item,
            intent,
            attrs,
            inputs,
            output,
            schema_file: None,
        })
    }
}

/// `streams` is whether the method returns a stream (`None` when its return type is
/// wrong, which has its own error).
fn check_signature(item: &TraitItemFn, streams: Option<bool>, errors: &mut Errors) {
    let sig = &item.sig;
    match (&sig.asyncness, streams) {
        (None, Some(false)) => errors.spanned(
            sig.fn_token,
            format!(
                "intent method `{}` must be `async fn` (or return `IntentStream<T>` from a plain `fn` to stream)",
                sig.ident
            ),
        ),
        (Some(asyncness), Some(true)) => errors.spanned(
            asyncness,
            format!(
                "streaming intent method `{}` returns its stream at once, without waiting: remove `async`",
                sig.ident
            ),
        ),
        _ => {}
    }
    if let Some(token) = &sig.constness {
        errors.spanned(token, "an intent method cannot be `const`");
    }
    if let Some(token) = &sig.unsafety {
        errors.spanned(token, "an intent method cannot be `unsafe`");
    }
    if let Some(abi) = &sig.abi {
        errors.spanned(abi, "an intent method cannot declare an ABI");
    }
    if let Some(variadic) = &sig.variadic {
        errors.spanned(variadic, "an intent method cannot be variadic");
    }
    for param in &sig.generics.params {
        if !matches!(param, syn::GenericParam::Lifetime(_)) {
            errors.spanned(
                param,
                "an intent method cannot have type or const parameters: the target and inputs must be concrete types (make the trait generic instead)",
            );
        }
    }
    if let Some(body) = &item.default {
        errors.at(
            body.span(),
            "an intent method has no body: the generated client implements it; remove the body or the `#[intent]` attribute",
        );
    }
}

fn inputs<'a>(item: &'a TraitItemFn, errors: &mut Errors) -> Option<Vec<Input<'a>>> {
    let sig = &item.sig;
    let mut params = sig.inputs.iter();
    let receiver_ok = match params.next() {
        Some(FnArg::Receiver(receiver))
            if receiver.reference.is_some()
                && receiver.mutability.is_none()
                && receiver.colon_token.is_none() =>
        {
            true
        }
        Some(FnArg::Receiver(receiver)) => {
            errors.spanned(
                receiver,
                "an intent method takes `&self`, so that calls can run concurrently",
            );
            false
        }
        _ => {
            errors.spanned(
                &sig.ident,
                format!("intent method `{}` must take `&self` first", sig.ident),
            );
            false
        }
    };
    let mut inputs = Vec::new();
    let mut ok = receiver_ok;
    for param in params {
        match param {
            FnArg::Typed(typed) => match &*typed.pat {
                Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => {
                    match media_shape(&typed.ty) {
                        Ok(media) => inputs.push(Input {
                            name: &pat.ident,
                            ty: &typed.ty,
                            media,
                        }),
                        Err(message) => {
                            errors.spanned(&typed.ty, message);
                            ok = false;
                        }
                    }
                }
                other => {
                    errors.spanned(
                        other,
                        "an intent input needs a plain name (it names the input for the model), like `text: &str`",
                    );
                    ok = false;
                }
            },
            FnArg::Receiver(receiver) => {
                errors.spanned(receiver, "`self` must be the first parameter");
                ok = false;
            }
        }
    }
    if receiver_ok && inputs.is_empty() && ok {
        errors.at(
            sig.paren_token.span.join(),
            format!(
                "intent method `{}` needs at least one input after `&self`, like `text: &str`",
                sig.ident
            ),
        );
        ok = false;
    }
    ok.then_some(inputs)
}

fn output<'a>(output: &'a ReturnType, errors: &mut Errors) -> Option<Output<'a>> {
    let ty = match output {
        ReturnType::Type(_, ty) => &**ty,
        ReturnType::Default => {
            errors.at(output.span(), RETURN_HELP);
            return None;
        }
    };
    if let Some(decision) = decision_output(ty, errors) {
        return decision;
    }
    let parsed = last_segment(ty).and_then(|segment| {
        let args = generic_types(&segment.arguments);
        match (segment.ident.to_string().as_str(), args.as_slice()) {
            ("Result", [target, error])
                if last_segment(error).is_some_and(|s| s.ident == "IntentError") =>
            {
                Some((Wrapper::Result, *target))
            }
            ("AIResult", [target]) => Some((Wrapper::AIResult, *target)),
            ("IntentStream", [target]) => Some((Wrapper::Stream, *target)),
            _ => None,
        }
    });
    let Some((wrapper, target)) = parsed else {
        errors.spanned(ty, RETURN_HELP);
        return None;
    };
    Some(Output {
        wrapper,
        target,
        kind: target_kind(target),
    })
}

const DECISION_RETURN_HELP: &str = "a decision question returns `Result<Binary, DecisionError>`, `Result<Choice<E>, DecisionError>` or `Result<Score<E>, DecisionError>`: it is answered with probabilities, in one request, without attempts";

/// The output of a method whose return type involves a decision type or
/// `DecisionError`: `None` when it involves neither, `Some(None)` when it is wrong (the
/// error is recorded).
pub(crate) fn decision_output<'a>(ty: &'a Type, errors: &mut Errors) -> Option<Option<Output<'a>>> {
    let segment = last_segment(ty)?;
    let args = generic_types(&segment.arguments);
    let (target, decision_error) = match (segment.ident.to_string().as_str(), args.as_slice()) {
        ("Result", [target, error]) => (
            *target,
            last_segment(error).is_some_and(|s| s.ident == "DecisionError"),
        ),
        ("AIResult", [target]) => (*target, false),
        _ => return None,
    };
    let kind = last_segment(target).and_then(|s| decision::kind_named(&s.ident.to_string()));
    match (kind, decision_error) {
        (None, false) => None,
        (Some(kind), true) => {
            if kind != decision::DecisionKind::Binary && options_type(target).is_none() {
                errors.spanned(
                    target,
                    "`Choice` and `Score` name the enum of their options, like `Choice<Route>`",
                );
                return Some(None);
            }
            Some(Some(Output {
                wrapper: Wrapper::Result,
                target,
                kind: TargetKind::Decision(kind),
            }))
        }
        _ => {
            errors.spanned(ty, DECISION_RETURN_HELP);
            Some(None)
        }
    }
}

/// `E` of `Choice<E>` / `Score<E>`.
pub(crate) fn options_type(target: &Type) -> Option<&Type> {
    match generic_types(&last_segment(target)?.arguments).as_slice() {
        [options] => Some(*options),
        _ => None,
    }
}

/// Whether the method returns `IntentStream<T>`; `None` when the return type is none the
/// macro knows (its own error says so).
fn returns_stream(output: &ReturnType) -> Option<bool> {
    let ReturnType::Type(_, ty) = output else {
        return None;
    };
    let name = last_segment(ty)?.ident.to_string();
    match name.as_str() {
        "IntentStream" => Some(true),
        "Result" | "AIResult" => Some(false),
        _ => None,
    }
}

fn target_kind(target: &Type) -> TargetKind {
    match last_segment(target) {
        Some(segment) if segment.arguments.is_none() && segment.ident == "String" => {
            TargetKind::Text
        }
        Some(segment) if segment.arguments.is_none() && segment.ident == "Value" => {
            TargetKind::Value
        }
        _ => TargetKind::Typed,
    }
}

/// The last segment of a plain path type (`a::b::C<..>` gives `C<..>`).
pub(crate) fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(path) if path.qself.is_none() => path.path.segments.last(),
        Type::Group(group) => last_segment(&group.elem),
        Type::Paren(paren) => last_segment(&paren.elem),
        _ => None,
    }
}

pub(crate) fn generic_types(arguments: &PathArguments) -> Vec<&Type> {
    match arguments {
        PathArguments::AngleBracketed(args) => args
            .args
            .iter()
            .filter_map(|arg| match arg {
                GenericArgument::Type(ty) => Some(ty),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}
