//! The explicit-proxy listener the daemon starts for sandboxes off this
//! node: bound, with its token verifier and a DNS gate per sandbox.

use std::{sync::Arc, time::Duration};

use anyhow::Context as _;

use crate::{
    config::Config, intercept::Interceptor, policy::store::PolicyStore, resolve::Resolver,
};

/// The explicit-proxy listener for sandboxes off this node, bound, with
/// its token verifier; `None` when the config has no `explicit_proxy`.
pub(super) async fn explicit_proxy(
    config: &Config,
    store: &Arc<PolicyStore>,
    resolver: &Arc<Resolver>,
    interceptor: &Arc<Interceptor>,
    quota: &crate::proxy::quota::Quota,
    ended: &Arc<crate::explicit::token::EndedSessions>,
    relayer: &crate::proxy::relay::Relayer,
) -> anyhow::Result<
    Option<(
        tokio::net::TcpListener,
        Arc<crate::explicit::listener::ExplicitProxy>,
    )>,
> {
    let Some(explicit) = &config.explicit_proxy else {
        return Ok(None);
    };
    let key = &explicit.public_key_file;
    let pem = std::fs::read(key).with_context(|| format!("reading {}", key.display()))?;
    let verifier = crate::explicit::token::Verifier::from_pem(&pem)
        .map_err(|e| anyhow::anyhow!("{}: {e}", key.display()))?
        .with_max_lifetime(explicit.max_token_lifetime_secs)
        .with_audience(explicit.audience.clone());
    let policies = store.current();
    for sandbox in &explicit.sandboxes {
        if policies.get(&sandbox.policy).is_none() {
            anyhow::bail!(
                "explicit_proxy.sandboxes: `{}` names policy `{}`, which is not in {}",
                sandbox.id,
                sandbox.policy,
                config.policy_dir.display()
            );
        }
    }
    let listener = tokio::net::TcpListener::bind(explicit.listen)
        .await
        .with_context(|| format!("binding the explicit proxy on {}", explicit.listen))?;
    let proxy = crate::explicit::listener::ExplicitProxy {
        verifier,
        sandboxes: explicit
            .sandboxes
            .iter()
            .map(|s| (s.id.clone(), s.policy.clone()))
            .collect(),
        lookups: explicit
            .sandboxes
            .iter()
            .map(|s| {
                let gate = crate::sandbox_dns::SandboxDns::new(
                    &s.id,
                    &s.policy,
                    // Overlays are kept for steered sandboxes only.
                    (
                        store.clone(),
                        Arc::new(crate::policy::overlay::Overlays::in_memory()),
                    ),
                    interceptor.audit.clone(),
                    interceptor.metrics.clone(),
                );
                (s.id.clone(), Arc::new(gate) as Arc<dyn crate::dns::Gate>)
            })
            .collect(),
        ended: ended.clone(),
        policies: store.clone(),
        resolver: resolver.clone(),
        interceptor: interceptor.clone(),
        metrics: interceptor.metrics.clone(),
        audit: interceptor.audit.clone(),
        header_timeout: Duration::from_millis(config.limits.header_read_timeout_ms),
        connect_timeout: Duration::from_millis(config.limits.connect_timeout_ms),
        max_header_bytes: config.limits.max_header_bytes,
        drain: interceptor.drain.clone(),
        pending: Arc::new(tokio::sync::Semaphore::new(
            explicit.max_pending_connections,
        )),
        pending_per_source: crate::proxy::quota::Quota::new(explicit.max_pending_per_source),
        pending_refusals: Default::default(),
        quota: quota.clone(),
        relayer: relayer.clone(),
    };
    Ok(Some((listener, Arc::new(proxy))))
}
