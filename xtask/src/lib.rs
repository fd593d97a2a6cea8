//! The developer tasks' parts that tests call directly, without spawning cargo: code
//! generation (`cargo xtask codegen`), the benchmark page's tables (`cargo xtask
//! bench-report`), the Markdown rules the docs' checks use, and codegen's command-line reader.

pub mod bench_report;
pub mod codegen;
pub mod flags;
pub mod markdown;
