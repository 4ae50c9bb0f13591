//! The chains' RPC URLs from SSM Parameter Store: one `SecureString` per chain, read once per
//! container with one `GetParameters` call. Errors name parameters, never their values.

use crate::domain::model::Chain;
use std::collections::BTreeMap;

/// The URL of each chain whose parameter is configured.
pub async fn rpc_urls(
    client: &aws_sdk_ssm::Client,
    parameters: &BTreeMap<Chain, String>,
) -> Result<BTreeMap<Chain, String>, String> {
    if parameters.is_empty() {
        return Ok(BTreeMap::new());
    }
    let answer = client
        .get_parameters()
        .set_names(Some(parameters.values().cloned().collect()))
        .with_decryption(true)
        .send()
        .await
        .map_err(|e| {
            format!(
                "GetParameters failed: {}",
                aws_sdk_ssm::error::DisplayErrorContext(e)
            )
        })?;
    if !answer.invalid_parameters().is_empty() {
        return Err(format!(
            "SSM parameters not found: {}",
            answer.invalid_parameters().join(", ")
        ));
    }
    let values: BTreeMap<&str, &str> = answer
        .parameters()
        .iter()
        .filter_map(|p| Some((p.name()?, p.value()?)))
        .collect();
    parameters
        .iter()
        .map(|(chain, name)| {
            let url = values
                .get(name.as_str())
                .filter(|v| !v.trim().is_empty())
                .ok_or_else(|| format!("SSM parameter {name} has no value"))?;
            Ok((*chain, url.trim().to_string()))
        })
        .collect()
}
