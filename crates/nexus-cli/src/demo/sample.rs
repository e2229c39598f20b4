//! The sample folder the demo's runner serves, and the runner itself: rho, in-process, on
//! that folder.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use nexus_sdk::Client;
use nexus_sdk::member::ExecutorInfo;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The file whose TODO the agent closes.
pub const NOTES: &str = "notes.md";

/// The text the scripted agent replaces (the bundled script names it verbatim).
pub const TODO_LINE: &str = "- [ ] TODO: say hello in greet.py";

const FILES: [(&str, &str); 3] = [
    (
        "README.md",
        "# tiny-greeter\n\nA two-file project the Nexus demo works on.\n\n- `greet.py` prints a greeting.\n- `notes.md` tracks what is left to do.\n",
    ),
    (
        "notes.md",
        "# Notes\n\n- [x] write greet.py\n- [ ] TODO: say hello in greet.py\n",
    ),
    (
        "greet.py",
        "def greet(name):\n    return f\"Hello, {name}!\"\n\n\nif __name__ == \"__main__\":\n    print(greet(\"world\"))\n",
    ),
];

/// Writes the sample project under `dir`.
pub fn write(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, text) in FILES {
        std::fs::write(dir.join(name), text).with_context(|| format!("writing {name}"))?;
    }
    Ok(())
}

/// rho serving a folder; [`Rho::stop`] lets running calls commit and ends it.
pub struct Rho {
    stop: watch::Sender<bool>,
    task: JoinHandle<anyhow::Result<()>>,
}

/// Starts rho on `root` for the kernel at `base`, and waits until `client` sees its tools.
pub async fn start_rho(
    base: &str,
    root: &Path,
    runner: &str,
    bearer: &str,
    client: &Client,
) -> anyhow::Result<(Rho, ExecutorInfo)> {
    let text = format!(
        "kernel_url = {}\nbearer_env = \"NEXUS_DEMO_RUNNER_TOKEN\"\nroot = {}\n",
        toml_string(base),
        toml_string(&root.display().to_string())
    );
    let config = rho::RhoConfig::parse(&text, root).context("the demo's rho config")?;
    let (stop, mut rx) = watch::channel(false);
    let shutdown = async move {
        while !*rx.borrow() {
            if rx.changed().await.is_err() {
                return;
            }
        }
    };
    let bearer = bearer.to_string();
    let task = tokio::spawn(async move { rho::serve(&config, &bearer, shutdown).await });
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(info) = client.runner(runner).await
            && info.tool_names().any(|n| n == "edit")
        {
            return Ok((Rho { stop, task }, info));
        }
        if task.is_finished() {
            task.await.context("the runner task")??;
            anyhow::bail!("the runner stopped before announcing its tools");
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the runner did not announce its tools in 30 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

impl Rho {
    pub async fn stop(self) -> anyhow::Result<()> {
        let _ = self.stop.send(true);
        self.task.await.context("the runner task")?
    }
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}
