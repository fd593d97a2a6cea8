//! The developer tasks' parts that tests call directly, without spawning cargo: code
//! generation (`cargo xtask codegen`), the Markdown rules the docs' checks use, and the
//! command-line reader every task shares.

pub mod codegen;
pub mod flags;
pub mod markdown;
