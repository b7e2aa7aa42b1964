//! Policies: the YAML files operators write (`raw`), their compiled,
//! immutable form (`compiled`, `network`), loading with located errors
//! (`load`, `locate`), and the SSRF address classes (`ssrf`).

pub mod closest;
pub mod compiled;
pub mod host_name;
pub mod load;
pub mod locate;
pub mod network;
pub mod raw;
pub mod ssrf;
pub mod store;
pub mod suggest;
