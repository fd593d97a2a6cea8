//! The developer tasks' parts that tests call directly, without spawning cargo: code
//! generation (`cargo xtask codegen`), the Markdown rules the docs' checks use, a crate's
//! source as syntax trees (the module-cycle and function-length tests, the public API
//! record), and the command-line reader every task shares.

pub mod codegen;
pub mod flags;
pub mod markdown;
pub mod source_tree;
