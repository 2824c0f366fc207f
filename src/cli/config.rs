//! Where the fleet commands connect, resolved once: `--url` beats the variables
//! (`BETTER_COMPUTE_URL`, `BETTER_COMPUTE_TOKEN`), which beat the configuration file
//! (`~/.config/better-compute/config.toml`, or `--config FILE`).

use super::error::CliError;
use serde::Deserialize;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The variable holding the server's URL.
pub const URL_VAR: &str = "BETTER_COMPUTE_URL";
/// The variable holding the API key.
pub const TOKEN_VAR: &str = "BETTER_COMPUTE_TOKEN";

/// A server and the API key to act as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    /// Base URL without a trailing slash, such as `https://compute.example.com`.
    pub url: String,
    /// The API key sent as `Authorization: Bearer`.
    pub token: String,
}

/// The configuration file's shape.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    url: Option<String>,
    token: Option<String>,
}

/// What the command line says about the connection.
#[derive(Debug, Default, Clone)]
pub struct ConnectionFlags {
    /// `--url`.
    pub url: Option<String>,
    /// `--config FILE`: a file that must exist.
    pub config: Option<PathBuf>,
}

impl ConnectionFlags {
    /// Reads the `--config` file, when given, for a command that connects to no server
    /// (`validate`, `plan --state`): the flag is read whatever else is given, so a file that is
    /// missing or not valid is the same usage error (exit 2) as for the other commands.
    pub fn read_config(&self) -> Result<(), CliError> {
        match &self.config {
            Some(path) => read_file(path, true).map(drop),
            None => Ok(()),
        }
    }
}

impl Connection {
    /// Resolves the connection from the flags, the variables (read through `var`, as
    /// `std::env::var_os` reads them) and the configuration file. A missing URL or key is a
    /// usage error that says how to give it.
    pub fn resolve(
        flags: &ConnectionFlags,
        var: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Connection, CliError> {
        let var = |name: &str| var(name).filter(|value| !value.to_string_lossy().trim().is_empty());
        // Only an empty variable counts as unset: one that is not UTF-8 is refused, never
        // replaced by the file's value (nor printed: it may be the key).
        let text = |name: &str, what: &str, rule: &str| {
            var(name)
                .map(|value| {
                    value.into_string().map_err(|_| {
                        CliError::usage(format!("{what} in {name} is not UTF-8 text; {rule}"))
                    })
                })
                .transpose()
        };
        let given_url = match flags.url.clone() {
            Some(url) => Some(url),
            None => text(
                URL_VAR,
                "the server URL",
                "it must start with http:// or https://",
            )?,
        };
        let given_token = text(
            TOKEN_VAR,
            "the API key",
            "an API key is one line of printable characters",
        )?;
        let (file_path, file) = match &flags.config {
            Some(path) => (Some(path.clone()), read_file(path, true)?),
            // The default file is read only for what the flag and the variables leave out: a
            // CI job given both is not stopped by a stale or broken file in its home.
            None if given_url.is_some() && given_token.is_some() => (None, FileConfig::default()),
            None => match default_file(&var) {
                Some(path) => {
                    let file = read_file(&path, false)?;
                    (Some(path), file)
                }
                None => (None, FileConfig::default()),
            },
        };
        let file_name = file_path
            .as_deref()
            .map(|path| path.display().to_string())
            .unwrap_or_else(|| "~/.config/better-compute/config.toml".to_owned());

        let url = given_url.or(file.url).ok_or_else(|| {
            CliError::usage(format!(
                "no server URL: pass --url URL, set {URL_VAR}, or put `url = \"https://...\"` \
                     in {file_name}"
            ))
        })?;
        // A key read from a file made with `echo` or a CI secret ends with a newline, which no
        // header value may hold: the key is the text without the whitespace around it.
        let (token, source) = given_token
            .map(|token| (token, TOKEN_VAR.to_owned()))
            .or_else(|| {
                file.token
                    .map(|token| (token, format!("`token` in {file_name}")))
            })
            .map(|(token, source)| (token.trim().to_owned(), source))
            .filter(|(token, _)| !token.is_empty())
            .ok_or_else(|| {
                CliError::usage(format!(
                    "no API key: set {TOKEN_VAR}, or put `token = \"...\"` in {file_name}"
                ))
            })?;
        // No header may hold a control character: say where the key came from, never the key.
        if token.chars().any(char::is_control) {
            return Err(CliError::usage(format!(
                "the API key in {source} holds a control character (a line break or tab inside \
                 it?); an API key is one line of printable characters"
            )));
        }
        // Messages quote the URL as given; requests use it without its trailing slashes.
        let given = url.trim();
        let url = given.trim_end_matches('/').to_owned();
        // A scheme is case-insensitive (RFC 3986): `HTTP://` is http.
        let scheme = |prefix: &str| {
            given
                .get(..prefix.len())
                .is_some_and(|start| start.eq_ignore_ascii_case(prefix))
        };
        let Some(scheme) = ["http://", "https://"].into_iter().find(|p| scheme(p)) else {
            return Err(CliError::usage(format!(
                "the server URL {given:?} must start with http:// or https://"
            )));
        };
        if url.len() <= scheme.len() {
            return Err(CliError::usage(format!(
                "the server URL {given:?} names no host: {scheme}HOST[:PORT]"
            )));
        }
        if let Err(err) = reqwest::Url::parse(&url) {
            return Err(CliError::usage(format!(
                "the server URL {given:?} is not a valid URL: {err}"
            )));
        }
        Ok(Connection { url, token })
    }
}

/// `$XDG_CONFIG_HOME/better-compute/config.toml`, else `~/.config/better-compute/config.toml`.
fn default_file(var: &impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let base = var("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|home| Path::new(&home).join(".config")))?;
    Some(base.join("better-compute").join("config.toml"))
}

/// Reads a configuration file; a missing default file is no configuration at all.
fn read_file(path: &Path, required: bool) -> Result<FileConfig, CliError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if !required && err.kind() == std::io::ErrorKind::NotFound => {
            return Ok(FileConfig::default());
        }
        Err(err) => {
            return Err(CliError::usage(format!(
                "cannot read the configuration file {}: {err}",
                path.display()
            )));
        }
    };
    toml::from_str(&text).map_err(|err| {
        CliError::usage(format!(
            "the configuration file {} is not valid: {}",
            path.display(),
            err.message()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn resolve(flags: &ConnectionFlags, vars: &[(&str, &str)]) -> Result<Connection, CliError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Connection::resolve(flags, |name| vars.get(name).map(OsString::from))
    }

    fn temp_config(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn flag_beats_variable_beats_file() {
        let (_dir, path) = temp_config("url = \"http://file\"\ntoken = \"file-token\"\n");
        let mut flags = ConnectionFlags {
            url: None,
            config: Some(path),
        };
        let from_file = resolve(&flags, &[]).unwrap();
        assert_eq!(from_file.url, "http://file");
        assert_eq!(from_file.token, "file-token");

        let vars = [(URL_VAR, "http://var/"), (TOKEN_VAR, "var-token")];
        let from_vars = resolve(&flags, &vars).unwrap();
        assert_eq!(from_vars.url, "http://var");
        assert_eq!(from_vars.token, "var-token");

        flags.url = Some("https://flag".into());
        assert_eq!(resolve(&flags, &vars).unwrap().url, "https://flag");
    }

    #[test]
    fn the_key_is_trimmed_and_a_blank_key_is_none() {
        let (_dir, path) = temp_config("url = \"http://file\"\ntoken = \" file-token\\n\"\n");
        let flags = ConnectionFlags {
            url: None,
            config: Some(path),
        };
        assert_eq!(resolve(&flags, &[]).unwrap().token, "file-token");
        let vars = [(TOKEN_VAR, "var-token\r\n")];
        assert_eq!(resolve(&flags, &vars).unwrap().token, "var-token");
        let (_dir, path) = temp_config("url = \"http://file\"\ntoken = \"\\n\"\n");
        let flags = ConnectionFlags {
            url: None,
            config: Some(path),
        };
        assert!(matches!(resolve(&flags, &[]), Err(CliError::Usage(m)) if m.contains(TOKEN_VAR)));
    }

    #[test]
    fn a_key_with_a_control_character_or_a_broken_url_is_a_usage_error() {
        let vars = [(URL_VAR, "http://x"), (TOKEN_VAR, "bc_secret\nrest")];
        let err = resolve(&ConnectionFlags::default(), &vars).unwrap_err();
        assert!(
            matches!(&err, CliError::Usage(m) if m.contains(TOKEN_VAR) && !m.contains("secret")),
            "{err}"
        );
        let (_dir, path) = temp_config("url = \"http://file\"\ntoken = \"bc_secret\\u0007\"\n");
        let flags = ConnectionFlags {
            url: None,
            config: Some(path.clone()),
        };
        let err = resolve(&flags, &[]).unwrap_err();
        let named = format!("`token` in {}", path.display());
        assert!(
            matches!(&err, CliError::Usage(m) if m.contains(&named) && !m.contains("secret")),
            "{err}"
        );
        let flags = ConnectionFlags {
            url: Some("http://[::1".into()),
            config: None,
        };
        let err = resolve(&flags, &[(TOKEN_VAR, "t")]).unwrap_err();
        assert!(
            matches!(&err, CliError::Usage(m) if m.contains("not a valid URL")),
            "{err}"
        );
        // The scheme in any case; another scheme, or none, is refused.
        for (given, ok) in [
            ("HTTP://Host:1/", true),
            ("Https://host", true),
            ("ftp://host", false),
            ("host:80", false),
            ("http:/host", false),
        ] {
            let flags = ConnectionFlags {
                url: Some(given.into()),
                config: None,
            };
            let got = resolve(&flags, &[(TOKEN_VAR, "t")]);
            match got {
                Ok(connection) if ok => {
                    assert_eq!(connection.url, given.trim_end_matches('/'))
                }
                Err(CliError::Usage(m)) if !ok => {
                    assert!(m.contains("must start with http:// or https://"), "{m}")
                }
                other => panic!("{given}: {other:?}"),
            }
        }
        // A URL with no host is said so, quoted as given (not cut to `http:`).
        for given in ["http://", "https:///", " http:// "] {
            let flags = ConnectionFlags {
                url: Some(given.into()),
                config: None,
            };
            let err = resolve(&flags, &[(TOKEN_VAR, "t")]).unwrap_err();
            let expected = format!(
                "the server URL {:?} names no host: {}HOST[:PORT]",
                given.trim(),
                &given.trim()[..given.trim().find("//").unwrap() + 2]
            );
            assert!(
                matches!(&err, CliError::Usage(m) if *m == expected),
                "{err}"
            );
        }
    }

    /// Only an empty variable counts as unset: one that is not UTF-8 is a usage error naming
    /// it (never the value), not a reason to use the file's.
    #[cfg(unix)]
    #[test]
    fn a_variable_that_is_not_utf8_is_a_usage_error() {
        use std::os::unix::ffi::OsStringExt as _;
        let (_dir, path) = temp_config("url = \"http://file\"\ntoken = \"file-token\"\n");
        let flags = ConnectionFlags {
            url: None,
            config: Some(path),
        };
        let not_utf8 = || OsString::from_vec(b"bc_secret\xff".to_vec());
        for name in [TOKEN_VAR, URL_VAR] {
            let err = Connection::resolve(&flags, |var| (var == name).then(not_utf8)).unwrap_err();
            assert!(
                matches!(&err, CliError::Usage(m) if m.contains(name)
                    && m.contains("not UTF-8") && !m.contains("secret")),
                "{name}: {err}"
            );
        }
        // A URL variable that --url overrides is not read.
        let flags = ConnectionFlags {
            url: Some("http://flag".into()),
            ..flags
        };
        let resolved = Connection::resolve(&flags, |var| (var == URL_VAR).then(not_utf8)).unwrap();
        assert_eq!(resolved.url, "http://flag");
    }

    #[test]
    fn default_file_lives_under_home() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join(".config/better-compute");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("config.toml"),
            "url = \"http://home\"\ntoken = \"t\"\n",
        )
        .unwrap();
        let home = dir.path().to_str().unwrap();
        let found = resolve(&ConnectionFlags::default(), &[("HOME", home)]).unwrap();
        assert_eq!(found.url, "http://home");
    }

    #[test]
    fn a_broken_default_file_stops_only_a_command_that_needs_it() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join(".config/better-compute");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("config.toml"),
            "url = \"http://home\"\ntoken = \n",
        )
        .unwrap();
        let home = ("HOME", dir.path().to_str().unwrap());
        // The flag or variable and the key's variable say everything: the file is not read.
        let given = resolve(
            &ConnectionFlags::default(),
            &[home, (URL_VAR, "http://var"), (TOKEN_VAR, "t")],
        )
        .unwrap();
        assert_eq!(
            (given.url.as_str(), given.token.as_str()),
            ("http://var", "t")
        );
        let flags = ConnectionFlags {
            url: Some("http://flag".into()),
            config: None,
        };
        assert_eq!(
            resolve(&flags, &[home, (TOKEN_VAR, "t")]).unwrap().url,
            "http://flag"
        );
        // Something left to the file: its error, naming it.
        let err = resolve(&flags, &[home]).unwrap_err();
        assert!(
            matches!(&err, CliError::Usage(m) if m.contains("not valid") && m.contains("config.toml")),
            "{err}"
        );
        // A file named by --config is read whatever else is given.
        let flags = ConnectionFlags {
            url: Some("http://flag".into()),
            config: Some(folder.join("config.toml")),
        };
        assert!(matches!(
            resolve(&flags, &[(TOKEN_VAR, "t")]),
            Err(CliError::Usage(_))
        ));
    }

    #[test]
    fn missing_pieces_are_usage_errors_that_say_how() {
        let err = resolve(&ConnectionFlags::default(), &[(TOKEN_VAR, "t")]).unwrap_err();
        assert!(matches!(&err, CliError::Usage(m) if m.contains("--url") && m.contains(URL_VAR)));
        let err = resolve(&ConnectionFlags::default(), &[(URL_VAR, "http://x")]).unwrap_err();
        assert!(matches!(&err, CliError::Usage(m) if m.contains(TOKEN_VAR)));
        let flags = ConnectionFlags {
            url: None,
            config: Some("/nonexistent/better-compute.toml".into()),
        };
        assert!(matches!(resolve(&flags, &[]), Err(CliError::Usage(_))));
        let (_dir, path) = temp_config("colour = true\n");
        let flags = ConnectionFlags {
            url: None,
            config: Some(path),
        };
        assert!(matches!(resolve(&flags, &[]), Err(CliError::Usage(m)) if m.contains("not valid")));
    }
}
