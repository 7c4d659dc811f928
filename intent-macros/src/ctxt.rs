//! An accumulator of errors, so that one build reports every mistake (serde's `Ctxt`).

use std::fmt::Display;

use proc_macro2::Span;
use quote::ToTokens;

/// Collects errors; [`Errors::finish`] combines them into one `syn::Error`.
#[derive(Default)]
pub(crate) struct Errors {
    combined: Option<syn::Error>,
}

impl Errors {
    /// Records an error spanning `tokens`.
    pub(crate) fn spanned(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// Records an error at `span`.
    pub(crate) fn at(&mut self, span: Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    /// Records an error built elsewhere (e.g. by a syn parser).
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.combined {
            Some(combined) => combined.combine(error),
            None => self.combined = Some(error),
        }
    }

    /// Keeps the value of `result`, recording its error.
    pub(crate) fn ok<T>(&mut self, result: syn::Result<T>) -> Option<T> {
        result.map_err(|error| self.push(error)).ok()
    }

    /// `Ok(value)` when nothing was recorded, else every error combined.
    pub(crate) fn finish<T>(self, value: T) -> syn::Result<T> {
        match self.combined {
            Some(error) => Err(error),
            None => Ok(value),
        }
    }
}
