//! The developer tasks' parts that tests call directly, without spawning cargo: code
//! generation (`cargo xtask codegen`), the benchmark page's tables (`cargo xtask
//! bench-report`), the Markdown rules the docs' checks use, a crate's source as syntax trees
//! (the module-cycle and function-length tests, the public API record).

pub mod bench_report;
pub mod codegen;
pub mod markdown;
pub mod source_tree;
