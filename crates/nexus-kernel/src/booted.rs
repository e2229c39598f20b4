//! Unit tests' starting point: a kernel over a test store, bootstrapped, with its agent
//! member authenticated (the integration tests have their own worlds under `tests/common`).

use serde_json::Value;
use uuid::Uuid;

use crate::Kernel;
use crate::auth::MemberPrincipal;

/// A bootstrapped kernel: the bootstrap's answer, its agent and its workspace.
pub(crate) struct Booted {
    pub kernel: Kernel,
    pub boot: Value,
    pub agent: MemberPrincipal,
    pub ws: Uuid,
}

impl Booted {
    pub(crate) async fn new(store: &nexus_store::Store) -> Booted {
        let kernel = Kernel::builder(store.clone()).build();
        let boot = serde_json::to_value(kernel.admin().bootstrap().await.unwrap()).unwrap();
        let bearer = format!("Bearer {}", boot["agent"]["member_token"].as_str().unwrap());
        let agent = kernel.admin().authenticate_member(Some(&bearer)).await.unwrap();
        let ws = Uuid::parse_str(boot["workspace_public_id"].as_str().unwrap()).unwrap();
        Booted {
            kernel,
            boot,
            agent,
            ws,
        }
    }
}
