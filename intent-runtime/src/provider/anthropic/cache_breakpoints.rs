//! Where a request marks Anthropic's prompt-cache breakpoints (`cache_control`).
//!
//! Anthropic caches a prompt prefix only up to a block marked with `cache_control`, and
//! only when the prefix holds at least the model family's minimum of tokens. Three
//! prefixes of a request are worth caching:
//!
//! - the system prompt: the same for every call of a method (with the schema enforced it
//!   holds the intent, the instructions and the examples), so repeated calls read it;
//! - the first user turn: every retry of a call sends it again unchanged;
//! - on a retry, the last turn: a further retry sends everything up to it again.
//!
//! A mark on a prefix shorter than the minimum is ignored by the provider (nothing is
//! cached, nothing is charged), so the length is estimated generously: a prefix that might
//! be long enough is marked. At most three marks are set, within Anthropic's four.

/// The fewest tokens Anthropic caches for `model`, from its prompt-caching
/// documentation: 4,096 for Claude Opus 4.5 and later and Haiku 4.5, 2,048 for Sonnet 4.6
/// and the Haiku 3 family, 1,024 for the other Sonnet and Opus models.
///
/// An unknown model gets the smallest documented minimum, 1,024: a mark below the model's
/// real minimum costs nothing, while a missing mark loses the cache.
pub(crate) fn minimum_cacheable_tokens(model: &str) -> u64 {
    let model = model.to_ascii_lowercase();
    let named = |families: &[&str]| families.iter().any(|family| model.contains(family));
    if named(&[
        "opus-4-5",
        "opus-4-6",
        "opus-4.5",
        "opus-4.6",
        "haiku-4-5",
        "haiku-4.5",
    ]) {
        4096
    } else if named(&[
        "sonnet-4-6",
        "sonnet-4.6",
        "haiku-3",
        "3-haiku",
        "3-5-haiku",
    ]) {
        2048
    } else {
        1024
    }
}

/// A generous token estimate for `bytes` of prompt text: one token per three bytes (English
/// prose averages about four; JSON and code fewer), so a prefix near the minimum is marked.
fn estimated_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(3)
}

/// The marks of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Breakpoints {
    /// Mark the system prompt.
    pub(crate) system: bool,
    /// Mark the first turn.
    pub(crate) first_turn: bool,
    /// On a retry, mark the last turn.
    pub(crate) last_turn: bool,
}

impl Breakpoints {
    /// The marks for a request with a system prompt of `system_len` bytes and turns of
    /// `turn_lens` bytes, sent to a model that caches from `minimum` tokens.
    pub(crate) fn place(system_len: usize, turn_lens: &[usize], minimum: u64) -> Self {
        let long_enough = |bytes: usize| estimated_tokens(bytes) >= minimum;
        let first = turn_lens.first().copied().unwrap_or(0);
        let all: usize = system_len + turn_lens.iter().sum::<usize>();
        Self {
            system: system_len > 0 && long_enough(system_len),
            first_turn: !turn_lens.is_empty() && long_enough(system_len + first),
            last_turn: turn_lens.len() > 1 && long_enough(all),
        }
    }

    /// Whether turn `index` of `count` is marked.
    pub(crate) fn marks_turn(&self, index: usize, count: usize) -> bool {
        (self.first_turn && index == 0) || (self.last_turn && index + 1 == count && count > 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimums_follow_the_model_family() {
        assert_eq!(minimum_cacheable_tokens("claude-sonnet-4-5"), 1024);
        assert_eq!(minimum_cacheable_tokens("claude-opus-4-1-20250805"), 1024);
        assert_eq!(minimum_cacheable_tokens("claude-opus-4-5-20251101"), 4096);
        assert_eq!(minimum_cacheable_tokens("claude-haiku-4-5"), 4096);
        assert_eq!(minimum_cacheable_tokens("claude-3-5-haiku-latest"), 2048);
        assert_eq!(minimum_cacheable_tokens("claude-3-haiku-20240307"), 2048);
        assert_eq!(minimum_cacheable_tokens("claude-sonnet-4-6"), 2048);
        assert_eq!(minimum_cacheable_tokens("my-proxy-model"), 1024);
    }

    #[test]
    fn short_prefixes_are_not_marked() {
        assert_eq!(
            Breakpoints::place(100, &[200], 1024),
            Breakpoints::default()
        );
        assert_eq!(
            Breakpoints::place(100, &[200, 50, 100], 1024),
            Breakpoints::default()
        );
    }

    #[test]
    fn a_long_system_prompt_and_first_turn_are_marked() {
        let marks = Breakpoints::place(3100, &[10], 1024);
        assert!(marks.system && marks.first_turn && !marks.last_turn);
        // The first turn is long enough together with a short system prompt.
        let marks = Breakpoints::place(20, &[3100], 1024);
        assert!(!marks.system && marks.first_turn);
        // A Haiku 4.5 minimum needs four times as much.
        assert_eq!(
            Breakpoints::place(20, &[3100], 4096),
            Breakpoints::default()
        );
    }

    #[test]
    fn a_retry_marks_its_last_turn_too() {
        let marks = Breakpoints::place(20, &[3100, 2000, 300], 1024);
        assert!(marks.first_turn && marks.last_turn);
        assert!(marks.marks_turn(0, 3) && !marks.marks_turn(1, 3) && marks.marks_turn(2, 3));
        // A first attempt has one turn: marked once.
        let marks = Breakpoints::place(20, &[3100], 1024);
        assert!(marks.marks_turn(0, 1) && !marks.last_turn);
    }
}
