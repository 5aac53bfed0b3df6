//! A whole host: the seed's acceptance run, spend budgets on virtual time, a host built from
//! one configuration file, and the house's floors.
//!
//! One test binary of the area (`cargo test -p sluice-tests --test host`); a file is one
//! concern, run alone with its module's name as the filter (`-- acceptance::`).

mod acceptance;
mod budgets;
mod config_file;
mod floors;
