//! The `throughput` bench with mimalloc as the global allocator instead of glibc's.
//!
//! Same parts, arguments and quick mode as `throughput`:
//! `cargo bench -p intent-rs --bench throughput_mimalloc`. The allocator is the
//! application's choice, not the library's; this shows how much of the cost per call
//! under concurrency is glibc malloc's (small blocks freed on another thread than the one
//! that allocated them).

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "throughput.rs"]
mod throughput;

fn main() {
    throughput::main();
}
