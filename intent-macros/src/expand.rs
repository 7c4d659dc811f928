//! Code generation: the trait with `Send` futures, and `<Trait>Client` implementing it by
//! calling `::intent_rs::__private`, where the behaviour lives.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, Ident, ItemTrait, ReturnType, Signature, TraitItem, Type};

use crate::attr;
use crate::check;
use crate::ctxt::Errors;
use crate::decision::DecisionKind;
use crate::model::{
    self, Input, IntentMethod, IntentTrait, MediaShape, TargetKind, Wrapper, batch_item_name,
    batchable,
};

/// Parses, checks and generates; every mistake comes back as one combined error.
pub(crate) fn intents(args: TokenStream, item: &ItemTrait) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    if !args.is_empty() {
        errors.spanned(
            args,
            "`#[intents]` takes no arguments; put options on each method's `#[intent]`",
        );
    }
    let mut model = IntentTrait::from_syn(item, &mut errors);
    check::check(&mut model, &mut errors);
    errors.finish(())?;
    let intent_trait = send_trait(item);
    let client = client(&model);
    Ok(quote!(#intent_trait #client))
}

/// The trait with our attributes removed and every `async fn` turned into a function
/// returning a `Send` future, so the client's calls can be spawned on any runtime.
pub(crate) fn send_trait(item: &ItemTrait) -> ItemTrait {
    let mut item = item.clone();
    for trait_item in &mut item.items {
        if let TraitItem::Fn(method) = trait_item {
            method.attrs.retain(|a| !attr::is_intent_attr(a));
            // A method with a body is the user's own code; only declarations become
            // `Send` futures.
            if method.default.is_none() {
                method.sig = send_signature(&method.sig);
            }
        }
    }
    item
}

/// `async fn f(..) -> T` as `fn f(..) -> impl Future<Output = T> + Send`.
pub(crate) fn send_signature(sig: &Signature) -> Signature {
    let mut sig = sig.clone();
    if let Some(asyncness) = sig.asyncness.take() {
        let output = match &sig.output {
            ReturnType::Default => quote!(()),
            ReturnType::Type(_, ty) => ty.to_token_stream(),
        };
        sig.output = syn::parse_quote_spanned! {asyncness.span()=>
            -> impl ::core::future::Future<Output = #output> + ::core::marker::Send
        };
    }
    sig
}

/// The name of the generated client: `<Trait>Client`.
pub(crate) fn client_name(item: &ItemTrait) -> Ident {
    format_ident!("{}Client", item.ident)
}

/// The client struct, its constructor and accessor, and its `impl` of the trait.
fn client(model: &IntentTrait<'_>) -> TokenStream {
    let item = model.item;
    let methods = model.methods.iter().map(method);
    let batch_items = model
        .methods
        .iter()
        .map(|m| batch_item(m, &item.vis, &item.generics));
    let mut providers: Vec<String> = Vec::new();
    for method in &model.methods {
        if let Some(name) = &method.intent.provider
            && !providers.contains(&name.value())
        {
            providers.push(name.value());
        }
    }
    let header = client_header(item, &TokenStream::new(), &providers);
    let name = client_name(item);
    let trait_name = &item.ident;
    let (impl_generics, ty_generics, where_clause) = item.generics.split_for_impl();
    quote! {
        #header
        impl #impl_generics #trait_name #ty_generics for #name #where_clause {
            #(#methods)*
        }

        impl #name {
            #(#batch_items)*
        }
    }
}

/// `<method>_batch_item`: the method's call, with the same input, intent and options, as
/// an item of a batch job instead of a live call.
///
/// The client is not generic, so a generic trait's parameters become the companion's own,
/// ahead of the method's.
fn batch_item(
    method: &IntentMethod<'_>,
    vis: &syn::Visibility,
    trait_generics: &syn::Generics,
) -> TokenStream {
    if !batchable(method) {
        return TokenStream::new();
    }
    let sig = &method.item.sig;
    let name = batch_item_name(&sig.ident);
    let mut generics = trait_generics.clone();
    generics.params.extend(sig.generics.params.iter().cloned());
    // Lifetimes go first, whichever side declared them.
    let (lifetimes, others): (Vec<_>, Vec<_>) = generics
        .params
        .into_iter()
        .partition(|param| matches!(param, syn::GenericParam::Lifetime(_)));
    generics.params = lifetimes.into_iter().chain(others).collect();
    if let Some(own) = &sig.generics.where_clause {
        generics
            .make_where_clause()
            .predicates
            .extend(own.predicates.iter().cloned());
    }
    let where_clause = &generics.where_clause;
    let params = method.inputs.iter().map(|input| {
        let (name, ty) = (input.name, input.ty);
        quote!(#name: #ty)
    });
    let target = method.output.target;
    let body = match method.output.kind {
        TargetKind::Decision(kind) => {
            let (state, function, args) = decision_call(method, kind, DecisionCall::BatchItem);
            quote! {
                let __intent_state = #state;
                ::intent_rs::__private::#function(#args)
            }
        }
        kind => {
            let strict_check = (kind == TargetKind::Typed && method.intent.json_mode.is_none())
                .then(|| crate::strict::assert_strict(target));
            let options = options(method);
            let input = input(&method.inputs);
            let text = &method.intent.text;
            let item = if kind == TargetKind::Value {
                let schema = runtime_schema(method);
                quote!(::intent_rs::__private::batch_value_item(__intent_input, #text, #schema, __intent_options))
            } else {
                let checked = typed_target(target);
                quote!(#checked.batch_item(__intent_input, #text, __intent_options))
            };
            quote! {
                #strict_check
                let __intent_input = #input;
                let __intent_options = #options;
                #item
            }
        }
    };
    let doc = format!(
        " [`{0}`](Self::{0})'s call as an item of a batch job ([`IntentClient::batch`](::intent_rs::IntentClient::batch)): the same request and checks, sent through the provider's batch API.",
        sig.ident
    );
    quote! {
        #[doc = #doc]
        #vis fn #name #generics (&self, #(#params),*) -> ::intent_rs::batch::BatchItem<#target> #where_clause {
            #body
        }
    }
}

/// The client struct with `new` and `client`, documented with the trait's own docs.
/// `extra` goes on the struct and its `impl` (the fallback silences unused warnings).
///
/// `providers` are the named providers the methods send calls to: `new` and `try_new`
/// check that the runtime client has each, so that a missing one is found when the
/// client is made.
pub(crate) fn client_header(
    item: &ItemTrait,
    extra: &TokenStream,
    providers: &[String],
) -> TokenStream {
    let vis = &item.vis;
    let name = client_name(item);
    let shown_name = name.to_string();
    let intro = format!(
        " A client of [`{}`] that asks a model for each method through an [`IntentClient`](::intent_rs::IntentClient). Generated by `#[intents]`.",
        item.ident
    );
    let docs = item.attrs.iter().filter(|a| a.path().is_ident("doc"));
    quote! {
        #[doc = #intro]
        #[doc = ""]
        #(#docs)*
        #[derive(::core::clone::Clone, ::core::fmt::Debug)]
        #extra
        #vis struct #name {
            client: ::intent_rs::IntentClient,
        }

        #extra
        impl #name {
            /// The named providers the methods send calls to (`provider = "..."`): the
            /// runtime client must have each.
            #vis const PROVIDERS: &'static [&'static str] = &[#(#providers),*];

            /// Sends every method through `client`.
            ///
            /// # Panics
            ///
            /// When `client` lacks one of [`PROVIDERS`](Self::PROVIDERS);
            /// [`try_new`](Self::try_new) returns that as an error instead.
            #vis fn new(client: ::intent_rs::IntentClient) -> Self {
                match Self::try_new(client) {
                    ::core::result::Result::Ok(bound) => bound,
                    ::core::result::Result::Err(missing) => ::core::panic!("{}", missing),
                }
            }

            /// Sends every method through `client`, or says which of
            /// [`PROVIDERS`](Self::PROVIDERS) it lacks.
            #vis fn try_new(
                client: ::intent_rs::IntentClient,
            ) -> ::core::result::Result<Self, ::intent_rs::UnknownProvider> {
                client.check_providers(#shown_name, Self::PROVIDERS)?;
                ::core::result::Result::Ok(Self { client })
            }

            /// The runtime client the methods call through.
            #vis fn client(&self) -> &::intent_rs::IntentClient {
                &self.client
            }

            /// A copy whose calls use `overrides` (model, temperature, attempts, time
            /// budget) over the methods' attributes and the client's defaults; see
            /// [`IntentClient::with_options`](::intent_rs::IntentClient::with_options).
            #vis fn with_options(&self, overrides: ::intent_rs::Overrides) -> Self {
                Self { client: self.client.with_options(overrides) }
            }
        }
    }
}

/// One method of the client's `impl`.
fn method(method: &IntentMethod<'_>) -> TokenStream {
    if let TargetKind::Decision(kind) = method.output.kind {
        return decision_method(method, kind);
    }
    let kept: &[Attribute] = &method.attrs.kept;
    let sig = send_signature(&method.item.sig);
    let target = method.output.target;
    let strict_check = (method.output.kind == TargetKind::Typed
        && method.intent.json_mode.is_none())
    .then(|| crate::strict::assert_strict(target));
    let options = options(method);
    let input = input(&method.inputs);
    let text = &method.intent.text;
    if method.output.wrapper == Wrapper::Stream {
        return stream_method(method, kept, &sig, strict_check, options, input);
    }
    let call = match method.output.kind {
        TargetKind::Text | TargetKind::Typed => {
            let checked = typed_target(target);
            quote!(#checked.call(&self.client, __intent_input, #text, __intent_options).await)
        }
        TargetKind::Decision(_) | TargetKind::Value => {
            let schema = runtime_schema(method);
            quote!(::intent_rs::__private::transform_value(&self.client, __intent_input, #text, #schema, __intent_options).await)
        }
    };
    let finish = (method.output.wrapper == Wrapper::Result).then(|| quote!(.into_result()));
    quote! {
        #(#kept)*
        #[allow(clippy::manual_async_fn)]
        #sig {
            async move {
                #strict_check
                let __intent_input = #input;
                let __intent_options = #options;
                #call #finish
            }
        }
    }
}

/// The target's one check of its derives, spanned on the user's type: a target without
/// `Deserialize` or `JsonSchema` is one error there (the method's and its batch
/// companion's identical calls are reported once), naming the derive to add; the call
/// it returns repeats no bound.
fn typed_target(target: &Type) -> TokenStream {
    quote_spanned!(target.span()=> ::intent_rs::__private::typed_target::<#target>())
}

/// A streaming method: the input is prepared at once and the stream owns the call.
fn stream_method(
    method: &IntentMethod<'_>,
    kept: &[Attribute],
    sig: &Signature,
    strict_check: Option<TokenStream>,
    options: TokenStream,
    input: TokenStream,
) -> TokenStream {
    let text = &method.intent.text;
    let target = method.output.target;
    let call = match method.output.kind {
        TargetKind::Text | TargetKind::Typed => {
            // The target's one check (with `Partial`'s message), on the user's type; the
            // call it returns and the signature's `IntentStream<T>` repeat no bound.
            let checked =
                quote_spanned!(target.span()=> ::intent_rs::__private::stream_target::<#target>());
            quote!(#checked.call(&self.client, __intent_input, #text, __intent_options))
        }
        TargetKind::Decision(_) | TargetKind::Value => {
            let schema = runtime_schema(method);
            quote!(::intent_rs::__private::transform_value_stream(&self.client, __intent_input, #text, #schema, __intent_options))
        }
    };
    quote! {
        #(#kept)*
        #sig {
            #strict_check
            let __intent_input = #input;
            let __intent_options = #options;
            #call
        }
    }
}

/// One decision method of the client's `impl`.
fn decision_method(method: &IntentMethod<'_>, kind: DecisionKind) -> TokenStream {
    let kept: &[Attribute] = &method.attrs.kept;
    let sig = send_signature(&method.item.sig);
    let (state, function, args) = decision_call(method, kind, DecisionCall::Method);
    quote! {
        #(#kept)*
        #[allow(clippy::manual_async_fn)]
        #sig {
            async move {
                let __intent_state = #state;
                ::intent_rs::__private::#function(&self.client, #args).await
            }
        }
    }
}

/// Where a decision question is asked from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum DecisionCall {
    /// The method itself: `decide_<kind>`.
    Method,
    /// Its batch companion: `<kind>_batch_item`.
    BatchItem,
}

/// The parts of a decision method's call of its `__private` function: the state
/// expression (bound to `__intent_state`), the function, and the arguments after the
/// client (for a choice or a score, the options' enum first).
fn decision_call(
    method: &IntentMethod<'_>,
    kind: DecisionKind,
    call: DecisionCall,
) -> (TokenStream, TokenStream, TokenStream) {
    let id = method.item.sig.ident.to_string();
    let question = &method.intent.text;
    let model = match &method.intent.model {
        Some(model) => quote!(::core::option::Option::Some(#model)),
        None => quote!(::core::option::Option::None),
    };
    let state = one_or_named(
        &method.inputs,
        quote!(::intent_rs::__private::state),
        quote!(::intent_rs::__private::named_state),
    );
    let name = match (kind, call) {
        (DecisionKind::Binary, DecisionCall::Method) => "decide_binary",
        (DecisionKind::Choice, DecisionCall::Method) => "decide_choice",
        (DecisionKind::Score, DecisionCall::Method) => "decide_score",
        (DecisionKind::Binary, DecisionCall::BatchItem) => "binary_batch_item",
        (DecisionKind::Choice, DecisionCall::BatchItem) => "choice_batch_item",
        (DecisionKind::Score, DecisionCall::BatchItem) => "score_batch_item",
    };
    let name = format_ident!("{name}");
    // The enum is checked where its options are made: the same tokens in the method and
    // its batch companion, spanned on the user's type, give the same error at the same
    // place, which the compiler reports once. The functions taking the options repeat no
    // bound.
    let enum_options = match (kind, model::options_type(method.output.target)) {
        (DecisionKind::Choice | DecisionKind::Score, Some(options)) => Some(
            quote_spanned!(options.span()=> ::intent_rs::__private::decision_enum::<#options>()),
        ),
        _ => None,
    };
    let enum_options = enum_options.map(|options| quote!(#options,));
    (
        state,
        quote!(#name),
        quote!(#enum_options #id, #question, __intent_state, #model),
    )
}

/// The `IntentOptions` builder chain for the method's attributes.
fn options(method: &IntentMethod<'_>) -> TokenStream {
    let target = method.output.target;
    let intent = &method.intent;
    let attrs = &method.attrs;
    let guardrails = &attrs.guardrails;
    // The method's name names the call's telemetry span (`intent <method>`).
    let name = method.item.sig.ident.to_string();
    let mut calls = vec![quote!(.method(#name))];
    if let Some(model) = &intent.model {
        calls.push(quote!(.model(#model)));
    }
    if let Some(provider) = &intent.provider {
        calls.push(quote!(.provider(#provider)));
    }
    if let Some(attempts) = intent.max_attempts {
        calls.push(quote!(.max_attempts(#attempts)));
    }
    if let Some(temperature) = intent.temperature {
        calls.push(quote!(.temperature(#temperature)));
    }
    if intent.json_mode.is_some() {
        calls.push(quote!(.json_mode()));
    }
    if let Some((_, on)) = intent.recover_answer {
        calls.push(quote!(.recover_answer(#on)));
    }
    if guardrails.require_judge.is_some() {
        calls.push(quote!(.require_judge()));
    }
    if let Some(calls_ceiling) = guardrails.max_model_calls {
        calls.push(quote!(.max_model_calls(#calls_ceiling)));
    }
    if let Some(picos) = guardrails.max_cost {
        calls.push(quote!(.max_cost(::intent_rs::Cost::from_pico_usd(#picos))));
    }
    if let Some(millis) = guardrails.time_budget_ms {
        calls.push(quote!(.time_budget(::core::time::Duration::from_millis(#millis))));
    }
    for example in &attrs.examples {
        let (input, output) = (&example.input, &example.output);
        calls.push(quote!(.example(#input, #output)));
    }
    if let Some(system) = &attrs.system {
        calls.push(quote!(.system(#system)));
    }
    if let Some(output) = &attrs.output {
        calls.push(quote!(.output_requirements(#output)));
    }
    let options = quote!(::intent_rs::IntentOptions::<#target>::new() #(#calls)*);
    if attrs.validators.is_empty() {
        return options;
    }
    // Spanned on each path, so a missing function or a wrong signature is reported at the
    // `#[validate(...)]` argument.
    let validators = attrs.validators.iter().map(|path| {
        quote_spanned!(path.span()=> ::intent_rs::__private::validator::<#target, _, _>(#path))
    });
    quote!(::intent_rs::__private::with_validators(#options, [#(#validators),*]))
}

/// The prepared input: one text input as itself, several as one object keyed by name;
/// then each image or document, in declaration order, named unless it is the only input
/// (a list's media one by one, an `Option`'s when it is `Some`).
fn input(inputs: &[Input<'_>]) -> TokenStream {
    let (media, text): (Vec<Input<'_>>, Vec<Input<'_>>) =
        inputs.iter().partition(|input| input.media.is_some());
    let one = quote!(::intent_rs::__private::input);
    let named = quote!(::intent_rs::__private::named_inputs);
    if media.is_empty() {
        return one_or_named(&text, one, named);
    }
    // Beside media, a text input is named too: the model sees which parameter it is.
    let prepared = match text.as_slice() {
        [] => quote!(::core::result::Result::Ok(
            ::intent_rs::__private::media_only()
        )),
        [single] => {
            let name = single.name.to_string();
            let arg = by_ref(single);
            quote!(#named(|inputs| inputs.with(#name, #arg)))
        }
        several => one_or_named(several, one, named),
    };
    let alone = inputs.len() == 1;
    let adds = media.iter().map(|input| {
        let arg = input.name;
        let name = if alone {
            quote!(::core::option::Option::None)
        } else {
            let name = input.name.to_string();
            quote!(::core::option::Option::Some(#name))
        };
        // Spanned on the parameter's type: a type named like a media input that is not
        // one is reported there.
        let ty = input.ty;
        match input.media {
            Some(MediaShape::List) => quote_spanned!(ty.span()=> .with_media_list(#name, &#arg)),
            Some(MediaShape::Optional) => quote_spanned!(ty.span()=>
                .with_optional_media(#name, ::core::option::Option::as_ref(&#arg))
            ),
            Some(MediaShape::One) | None => quote_spanned!(ty.span()=> .with_media(#name, &#arg)),
        }
    });
    quote!(::core::result::Result::map(#prepared, |__intent_prepared| __intent_prepared #(#adds)*))
}

/// `one(arg)` for a single input; for several, `named(|inputs| inputs.with("a", a)?...)`,
/// each added under its name.
fn one_or_named(inputs: &[Input<'_>], one: TokenStream, named: TokenStream) -> TokenStream {
    match inputs {
        [single] => {
            let arg = by_ref(single);
            quote!(#one(#arg))
        }
        several => {
            let adds = several.iter().map(|input| {
                let name = input.name.to_string();
                let arg = by_ref(input);
                quote!(.with(#name, #arg))
            });
            // `a(..)?.b(..)`: the closure returns the last `with`'s result as it is.
            quote!(#named(|inputs| inputs #(#adds)?*))
        }
    }
}

/// The input by reference: a reference parameter as it is, an owned one borrowed.
fn by_ref(input: &Input<'_>) -> TokenStream {
    let name = input.name;
    match input.ty {
        Type::Reference(_) => quote!(#name),
        _ => quote!(&#name),
    }
}

/// `None`, or `Some(&SCHEMA)` with the file embedded by `include_str!`.
fn runtime_schema(method: &IntentMethod<'_>) -> TokenStream {
    match &method.schema_file {
        None => quote!(::core::option::Option::None),
        Some(file) => {
            let path = &file.absolute;
            quote!({
                static SCHEMA: ::intent_rs::__private::RuntimeSchema =
                    ::intent_rs::__private::RuntimeSchema::new(::core::include_str!(#path));
                ::core::option::Option::Some(&SCHEMA)
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(source: &str) -> TokenStream {
        let item: ItemTrait = syn::parse_str(source).unwrap();
        intents(TokenStream::new(), &item).unwrap()
    }

    const TYPICAL: &str = r##"
        /// Reads documents.
        pub trait Documents {
            /// The sentiment.
            #[intent("Classify the sentiment of the review", model = "small", max_attempts = 3)]
            async fn sentiment(&self, review: &str) -> Result<Sentiment, IntentError>;

            #[intent("Extract the invoice fields", temperature = 0.0)]
            #[guardrail(require_judge, max_model_calls = 6, time_budget_ms = 30000)]
            #[validate(totals_add_up)]
            #[example(input = "Invoice 7", output = r#"{"value": {"number": "7"}}"#)]
            #[system("Amounts are in cents.")]
            #[output("Dates in ISO 8601.")]
            async fn invoice(&self, document: &str, currency: Currency) -> AIResult<Invoice>;

            #[intent("Summarize in one sentence")]
            async fn summary(&self, text: &str) -> Result<String, IntentError>;
        }
    "##;

    /// The expansion laid out by rustfmt, as a reader of `cargo expand` would see it.
    fn formatted(tokens: &TokenStream) -> String {
        use std::io::Write;
        use std::process::{Command, Stdio};
        let mut rustfmt = Command::new("rustfmt")
            .args(["--edition", "2024", "--emit", "stdout"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("rustfmt is installed (CI installs it)");
        let mut stdin = rustfmt.stdin.take().unwrap();
        stdin.write_all(tokens.to_string().as_bytes()).unwrap();
        drop(stdin);
        let output = rustfmt.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    #[test]
    fn a_typical_method_expands_to_fewer_than_40_lines() {
        let expansion = formatted(&expand(TYPICAL));
        let impl_start = expansion
            .find("impl Documents for DocumentsClient")
            .unwrap();
        let batch_start = expansion.rfind("impl DocumentsClient {").unwrap();
        let methods = &expansion[impl_start..batch_start];
        let total = expansion.lines().count();
        let per_method = methods.lines().count() / 3;
        let per_companion = expansion[batch_start..].lines().count() / 3;
        assert!(
            per_companion < 40,
            "{per_companion} lines per batch companion:\n{expansion}"
        );
        println!(
            "expansion: {total} lines in all, {per_method} lines per method in the impl\n{expansion}"
        );
        assert!(
            per_method < 40,
            "{per_method} lines per method:\n{expansion}"
        );
    }

    #[test]
    fn the_generated_code_reaches_the_runtime_by_absolute_paths_only() {
        let expansion = expand(TYPICAL).to_string();
        // Doc strings name the runtime's items too; only the code matters here.
        let code: String = expansion.split('"').step_by(2).collect();
        let text = code.as_str();
        for call in ["IntentOptions", "IntentClient", "__private"] {
            for (index, _) in text.match_indices(call) {
                let before = &text[..index];
                assert!(
                    before.ends_with(":: intent_rs :: "),
                    "relative `{call}` at {index}: {text}"
                );
            }
        }
        assert!(!text.contains(". json_mode ()"));
        assert!(
            text.contains(
                "__private :: with_validators (:: intent_rs :: IntentOptions :: < Invoice >"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "[:: intent_rs :: __private :: validator :: < Invoice , _ , _ > (totals_add_up)]"
            ),
            "{text}"
        );
    }

    #[test]
    fn several_inputs_are_named_and_one_input_is_sent_as_itself() {
        let text = expand(TYPICAL).to_string();
        assert!(
            text.contains(r#"named_inputs (| inputs | inputs . with ("document" , document) ? . with ("currency" , & currency))"#),
            "{text}"
        );
        assert!(text.contains("__private :: input (review)"), "{text}");
    }

    #[test]
    fn strictness_is_checked_for_typed_targets_only() {
        let text = expand(TYPICAL).to_string();
        // Once in each typed method, once in its batch companion.
        assert_eq!(text.matches("assert_strict").count(), 4, "{text}");
        assert!(!text.contains("assert_strict :: < String >"));
    }

    #[test]
    fn every_method_has_a_batch_companion_taking_its_arguments() {
        let text = expand(TYPICAL).to_string();
        assert!(
            text.contains("fn invoice_batch_item (& self , document : & str , currency : Currency) -> :: intent_rs :: batch :: BatchItem < Invoice >"),
            "{text}"
        );
        assert!(
            text.contains(r#":: intent_rs :: __private :: typed_target :: < Sentiment > () . batch_item (__intent_input , "Classify the sentiment of the review" , __intent_options)"#),
            "{text}"
        );
        assert!(text.contains("fn summary_batch_item"), "{text}");
    }

    #[test]
    fn decision_methods_have_batch_companions_and_streams_have_none() {
        let text = expand(
            r#"
            trait Triage {
                #[intent("Which team?")]
                async fn team(&self, ticket: &str) -> Result<Choice<Team>, DecisionError>;
                #[intent("Is it done?")]
                async fn done(&self, ticket: &str) -> Result<Binary, DecisionError>;
                #[intent("Summarize")]
                fn summary(&self, ticket: &str) -> IntentStream<String>;
            }
            "#,
        )
        .to_string();
        assert!(
            text.contains("fn team_batch_item (& self , ticket : & str) -> :: intent_rs :: batch :: BatchItem < Choice < Team > >"),
            "{text}"
        );
        assert!(
            text.contains(r#":: intent_rs :: __private :: choice_batch_item (:: intent_rs :: __private :: decision_enum :: < Team > () , "team" , "Which team?" , __intent_state , :: core :: option :: Option :: None)"#),
            "{text}"
        );
        assert!(
            text.contains(":: intent_rs :: __private :: binary_batch_item (\"done\""),
            "{text}"
        );
        assert!(!text.contains("summary_batch_item"), "{text}");
    }

    #[test]
    fn a_method_named_like_a_batch_companion_is_refused() {
        let item: ItemTrait = syn::parse_str(
            r#"trait Docs {
                #[intent("Summarize")]
                async fn summary(&self, text: &str) -> Result<String, IntentError>;
                fn summary_batch_item(&self) {}
            }"#,
        )
        .unwrap();
        let error = intents(TokenStream::new(), &item).unwrap_err();
        assert_eq!(
            error.to_string(),
            "`summary_batch_item` is the name of the batch companion the client generates for `summary`; rename this method"
        );
    }

    #[test]
    fn async_methods_become_send_futures() {
        let sig: Signature = syn::parse_quote!(async fn f(&self, a: &str) -> AIResult<u8>);
        assert_eq!(
            send_signature(&sig).to_token_stream().to_string(),
            "fn f (& self , a : & str) -> impl :: core :: future :: Future < Output = AIResult < u8 > > + :: core :: marker :: Send"
        );
    }

    #[test]
    fn media_lists_and_options_add_each_medium_by_their_shape() {
        let text = expand(
            r#"
            trait Receipts {
                #[intent("Total the receipt")]
                async fn total(&self, note: &str, pages: Vec<Document>, photos: &[Image], cover: Option<Image>, stamp: &Image) -> Result<u32, IntentError>;
                #[intent("Describe them")]
                async fn describe(&self, photos: Vec<Image>) -> Result<String, IntentError>;
            }"#,
        )
        .to_string();
        assert!(
            text.contains(r#"__intent_prepared . with_media_list (:: core :: option :: Option :: Some ("pages") , & pages) . with_media_list (:: core :: option :: Option :: Some ("photos") , & photos) . with_optional_media (:: core :: option :: Option :: Some ("cover") , :: core :: option :: Option :: as_ref (& cover)) . with_media (:: core :: option :: Option :: Some ("stamp") , & stamp)"#),
            "{text}"
        );
        // The only input is labelled by its type alone, as a single image is.
        assert!(
            text.contains(r#". with_media_list (:: core :: option :: Option :: None , & photos)"#),
            "{text}"
        );
    }

    #[test]
    fn media_in_shapes_that_cannot_be_sent_are_refused_with_what_to_write() {
        for (ty, expected) in [
            ("Vec<Vec<Image>>", "a list of lists of media cannot be sent"),
            (
                "Vec<Option<Document>>",
                "a list of optional media cannot be sent",
            ),
            (
                "Option<Vec<Image>>",
                "an optional list of media cannot be sent",
            ),
            (
                "Option<&[Image]>",
                "an optional list of media cannot be sent",
            ),
            (
                "HashMap<String, Image>",
                "this parameter holds images or documents in a shape that cannot be sent",
            ),
            (
                "(Image, Image)",
                "this parameter holds images or documents in a shape that cannot be sent",
            ),
        ] {
            let item: ItemTrait = syn::parse_str(&format!(
                r#"trait Scans {{
                    #[intent("Describe")]
                    async fn describe(&self, scans: {ty}) -> Result<String, IntentError>;
                }}"#
            ))
            .unwrap();
            let error = intents(TokenStream::new(), &item).unwrap_err().to_string();
            assert!(error.starts_with(expected), "{ty}: {error}");
            assert!(
                error.contains("`Vec<Image>` or `&[Image]`"),
                "{ty}: {error}"
            );
        }
        // A type of the user's own that only shares the name, with type arguments, is text.
        let text = expand(
            r#"trait Scans {
                #[intent("Describe")]
                async fn describe(&self, scan: Image<u8>) -> Result<String, IntentError>;
            }"#,
        )
        .to_string();
        assert!(text.contains("__private :: input (& scan)"), "{text}");
    }
}
