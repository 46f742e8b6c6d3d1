//! The transport engine, in blocks named after the model's functions: so far the command unit (`cmd`).

pub mod cmd;
