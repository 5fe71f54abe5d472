//! The differential suite's cases, by concern (see `directus_differential.rs`).

pub mod auth;
pub mod errors;
pub mod graphql;
pub mod permissions;
pub mod reads;
pub mod relations;
pub mod utils;
pub mod writes;
