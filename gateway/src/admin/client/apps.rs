//! The admin client's calls for published apps (`sluice app`).

use hyper::Method;

use super::{Client, ClientError, decode, encode, expect_success};
use crate::ingress::{
    publish::{AppInfo, PublishRequest, ScopeRequest},
    route::valid_name,
    scope::Scope,
};

/// App names go into the path: only DNS labels, so nothing escapes it.
fn path_name(name: &str) -> Result<(), ClientError> {
    if valid_name(name) {
        Ok(())
    } else {
        Err(ClientError::Invalid(format!(
            "`{name}` is not an app name (a-z 0-9 -)"
        )))
    }
}

impl Client {
    pub async fn apps(&self) -> Result<Vec<AppInfo>, ClientError> {
        let (status, body) = self.call(Method::GET, "/v1/apps".into(), None).await?;
        decode(status, &body)
    }

    pub async fn publish(&self, req: &PublishRequest) -> Result<AppInfo, ClientError> {
        let body = encode(req)?;
        let (status, body) = self
            .call(Method::POST, "/v1/apps".into(), Some(body))
            .await?;
        decode(status, &body)
    }

    pub async fn unpublish(&self, name: &str) -> Result<(), ClientError> {
        path_name(name)?;
        let (status, body) = self
            .call(Method::DELETE, format!("/v1/apps/{name}"), None)
            .await?;
        expect_success(status, &body)
    }

    pub async fn set_scope(&self, name: &str, scope: Scope) -> Result<AppInfo, ClientError> {
        path_name(name)?;
        let body = encode(&ScopeRequest { scope })?;
        let (status, body) = self
            .call(Method::PUT, format!("/v1/apps/{name}/scope"), Some(body))
            .await?;
        decode(status, &body)
    }
}
