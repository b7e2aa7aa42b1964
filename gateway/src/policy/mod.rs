//! Policies: the YAML files operators write (`raw`), their compiled,
//! immutable form (`compiled`, `network`), loading with located errors
//! (`load`, `locate`), the SSRF address classes (`ssrf`), and the allow
//! rules added to one sandbox at run time (`overlay`).

pub mod closest;
pub mod compiled;
pub mod host_name;
pub mod load;
pub mod locate;
pub mod network;
pub mod overlay;
pub mod raw;
pub mod ssrf;
pub mod store;
pub mod suggest;
