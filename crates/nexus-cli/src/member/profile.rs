//! The profile file `nexus login` writes: `$XDG_CONFIG_HOME/nexus/profiles.toml` (else
//! `~/.config/nexus/profiles.toml`), mode 0600 in a 0700 folder, one `[profiles.<name>]`
//! table per profile. The bearer in it is a secret: it is never printed.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Failure;

/// The environment variable naming the profile to use.
pub const ENV_PROFILE: &str = "NEXUS_PROFILE";
/// The profile used when none is named.
pub const DEFAULT_PROFILE: &str = "default";

/// One saved connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub url: String,
    pub token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    profiles: BTreeMap<String, Profile>,
}

/// The profile name: the flag, else `NEXUS_PROFILE`, else `default`.
pub fn name(flag: Option<&str>) -> String {
    flag.map(str::to_string)
        .or_else(|| std::env::var(ENV_PROFILE).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| DEFAULT_PROFILE.into())
}

/// The file's path.
pub fn path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("nexus").join("profiles.toml"))
}

fn read() -> Result<File, Failure> {
    let Some(path) = path() else {
        return Ok(File::default());
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            toml::from_str(&text).map_err(|e| Failure::local("invalid_profile", format!("{}: {e}", path.display())))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(File::default()),
        Err(e) => Err(Failure::local("io", format!("{}: {e}", path.display()))),
    }
}

/// The saved profile `name`, if any.
pub fn load(name: &str) -> Result<Option<Profile>, Failure> {
    Ok(read()?.profiles.remove(name))
}

/// Saves `profile` as `name` (other profiles are kept); returns the file's path.
pub fn save(name: &str, profile: Profile) -> Result<PathBuf, Failure> {
    let path = path().ok_or_else(|| Failure::local("io", "neither XDG_CONFIG_HOME nor HOME is set"))?;
    let mut file = read()?;
    file.profiles.insert(name.to_string(), profile);
    let text = toml::to_string(&file).map_err(|e| Failure::local("io", e.to_string()))?;
    let dir = path.parent().expect("the profile path has a folder");
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(".profiles.toml.tmp");
    let mut out = private_file(&tmp)?;
    out.write_all(text.as_bytes())?;
    out.sync_all()?;
    std::fs::rename(&tmp, &path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(path)
}

/// A new file only its owner may read or write.
fn private_file(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let file = options.open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}
