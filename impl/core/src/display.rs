//! Which display surface a VM gets: a QEMU window on a graphical host, VNC otherwise.
//!
//! Implements json-v3#types, the detection order of docs/contract.md behaviour#qemu, plus
//! the human `display:` lines of docs/contract.md behaviour#cli (human output only: the VNC socket's path
//! never reaches `--json`): the full notice `up` shows once per VM ([`human_lines`]) and the
//! two fields `get` always shows ([`compact_lines`]); docs/decisions/cli.md "display notice".

use std::path::Path;

use stoat_wire::dto::Display;

use crate::Env;

/// A VNC viewer found on PATH, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Viewer {
    Gvncviewer,
    Socat,
    None,
}

impl Viewer {
    /// The first of gvncviewer, socat on the environment's PATH.
    pub fn find(env: &Env) -> Viewer {
        if env.which("gvncviewer").is_some() {
            Viewer::Gvncviewer
        } else if env.which("socat").is_some() {
            Viewer::Socat
        } else {
            Viewer::None
        }
    }
}

/// What the display lines depend on, read from the environment.
struct Facts {
    surface: Display,
    wanted_window: bool,
    viewer: Viewer,
}

impl Facts {
    fn read(env: &Env, pref: &str) -> Facts {
        let graphical = graphical_session(env);
        let surface = display_for(pref, graphical);
        Facts {
            surface,
            // Only an explicit `window` is a wish to explain away on a headless host.
            wanted_window: !graphical && pref == "window",
            viewer: match surface {
                Display::Vnc => Viewer::find(env),
                _ => Viewer::None,
            },
        }
    }
}

/// The `display:` notice `up` prints for a VM whose stored preference is `pref`.
pub fn human_lines(env: &Env, pref: &str, vnc_socket: &Path) -> Vec<String> {
    let facts = Facts::read(env, pref);
    if !facts.wanted_window && facts.surface == Display::Vnc {
        // A headless host where nobody asked for a window: where the screen is, briefly.
        return compact_lines_for(facts.surface, vnc_socket, facts.viewer);
    }
    lines_for(facts.surface, facts.wanted_window, vnc_socket, facts.viewer)
}

/// The `display:` and `attach:` fields `get` prints: where the screen is and how to reach it,
/// without the notice's explanation of why there is no window.
pub fn compact_lines(env: &Env, pref: &str, vnc_socket: &Path) -> Vec<String> {
    let facts = Facts::read(env, pref);
    compact_lines_for(facts.surface, vnc_socket, facts.viewer)
}

/// [`compact_lines`] without the environment.
pub fn compact_lines_for(surface: Display, vnc_socket: &Path, viewer: Viewer) -> Vec<String> {
    if surface == Display::Window {
        return vec!["display: a qemu window".into()];
    }
    let sock = vnc_socket.display();
    let attach = match viewer {
        Viewer::Gvncviewer => format!("gvncviewer {sock}"),
        Viewer::Socat => format!(
            "socat TCP-LISTEN:5900,bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:{sock}, then any VNC client at 127.0.0.1:5900"
        ),
        Viewer::None => "no VNC viewer found (install gvncviewer or socat)".into(),
    };
    vec![
        format!("display: vnc on {sock}"),
        format!("attach: {attach}"),
    ]
}

/// [`human_lines`] without the environment: `wanted_window` says the VM would have had a
/// window on a host with a graphical session.
pub fn lines_for(
    surface: Display,
    wanted_window: bool,
    vnc_socket: &Path,
    viewer: Viewer,
) -> Vec<String> {
    if surface == Display::Window {
        return vec!["display: a qemu window".into()];
    }
    let sock = vnc_socket.display();
    let mut lines = Vec::new();
    if wanted_window {
        lines.push(
            "no usable graphical session on this host (set DISPLAY or WAYLAND_DISPLAY, \
             or STOAT_GRAPHICAL=1), so the VM runs headless"
                .into(),
        );
    }
    lines.push(format!("display: no qemu window; the screen is on {sock}"));
    match viewer {
        Viewer::Gvncviewer => lines.push(format!("  attach with: gvncviewer {sock}")),
        Viewer::Socat => {
            lines.push(format!(
                "  attach with: socat TCP-LISTEN:5900,bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:{sock}"
            ));
            lines.push("  then point any VNC client at 127.0.0.1:5900".into());
        }
        Viewer::None => {
            lines.push("  no VNC viewer found; install one of: gvncviewer, socat".into())
        }
    }
    lines
}

/// Returns whether this host has a graphical session.
pub fn graphical_session(env: &Env) -> bool {
    if let Some(forced) = env.get("STOAT_GRAPHICAL").and_then(parse_bool) {
        return forced;
    }
    if env.get("WAYLAND_DISPLAY").is_some() || env.get("DISPLAY").is_some() {
        return true;
    }
    env.get("XDG_RUNTIME_DIR")
        .map(|dir| std::path::Path::new(dir).join("wayland-0").exists())
        .unwrap_or(false)
}

/// Returns the surface for a VM whose stored preference is `pref` (`""`, `auto`, `window`, `vnc`).
pub fn display_for(pref: &str, graphical: bool) -> Display {
    if !graphical || pref == "vnc" {
        Display::Vnc
    } else {
        Display::Window
    }
}

fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_wins_and_no_session_means_vnc() {
        let forced_on = Env::from_pairs([("STOAT_GRAPHICAL", "1")]);
        assert!(graphical_session(&forced_on));
        let forced_off = Env::from_pairs([("STOAT_GRAPHICAL", "0"), ("DISPLAY", ":0")]);
        assert!(!graphical_session(&forced_off));
        assert_eq!(display_for("", false), Display::Vnc);
        assert_eq!(display_for("vnc", true), Display::Vnc);
        assert_eq!(display_for("", true), Display::Window);
    }

    #[test]
    fn human_lines_name_the_surface_and_how_to_attach() {
        let sock = Path::new("/r/web/vnc.sock");
        assert_eq!(
            lines_for(Display::Window, false, sock, Viewer::None),
            ["display: a qemu window"]
        );
        insta::assert_snapshot!(lines_for(Display::Vnc, false, sock, Viewer::Gvncviewer).join("\n"), @r"
        display: no qemu window; the screen is on /r/web/vnc.sock
          attach with: gvncviewer /r/web/vnc.sock
        ");
        insta::assert_snapshot!(lines_for(Display::Vnc, true, sock, Viewer::Socat).join("\n"), @r"
        no usable graphical session on this host (set DISPLAY or WAYLAND_DISPLAY, or STOAT_GRAPHICAL=1), so the VM runs headless
        display: no qemu window; the screen is on /r/web/vnc.sock
          attach with: socat TCP-LISTEN:5900,bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:/r/web/vnc.sock
          then point any VNC client at 127.0.0.1:5900
        ");
        insta::assert_snapshot!(lines_for(Display::Vnc, false, sock, Viewer::None).join("\n"), @r"
        display: no qemu window; the screen is on /r/web/vnc.sock
          no VNC viewer found; install one of: gvncviewer, socat
        ");
    }

    #[test]
    fn compact_lines_say_where_and_how_in_two_fields() {
        let sock = Path::new("/r/web/vnc.sock");
        assert_eq!(
            compact_lines_for(Display::Window, sock, Viewer::None),
            ["display: a qemu window"]
        );
        insta::assert_snapshot!(compact_lines_for(Display::Vnc, sock, Viewer::Gvncviewer).join("\n"), @r"
        display: vnc on /r/web/vnc.sock
        attach: gvncviewer /r/web/vnc.sock
        ");
        insta::assert_snapshot!(compact_lines_for(Display::Vnc, sock, Viewer::Socat).join("\n"), @r"
        display: vnc on /r/web/vnc.sock
        attach: socat TCP-LISTEN:5900,bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:/r/web/vnc.sock, then any VNC client at 127.0.0.1:5900
        ");
        insta::assert_snapshot!(compact_lines_for(Display::Vnc, sock, Viewer::None).join("\n"), @r"
        display: vnc on /r/web/vnc.sock
        attach: no VNC viewer found (install gvncviewer or socat)
        ");
        // No session paragraph, whatever the session.
        let headless = Env::from_pairs([("STOAT_GRAPHICAL", "0"), ("PATH", "")]);
        let lines = compact_lines(&headless, "", sock);
        assert!(
            lines.iter().all(|l| !l.contains("graphical session")),
            "{lines:?}"
        );
    }

    #[test]
    fn human_lines_read_the_session_and_path_from_the_env() {
        let sock = Path::new("/r/w/vnc.sock");
        let window = Env::from_pairs([("STOAT_GRAPHICAL", "1"), ("PATH", "")]);
        assert_eq!(human_lines(&window, "", sock), ["display: a qemu window"]);
        let asked_vnc = human_lines(&window, "vnc", sock);
        assert_eq!(asked_vnc[0], "display: vnc on /r/w/vnc.sock");
        // A headless host where nobody asked for a window: the two short lines.
        let headless = Env::from_pairs([("STOAT_GRAPHICAL", "0"), ("PATH", "")]);
        let lines = human_lines(&headless, "", sock);
        assert_eq!(lines[0], "display: vnc on /r/w/vnc.sock", "{lines:?}");
        assert_eq!(lines.len(), 2);
        // Asking for a window there is the one case that explains why there is none.
        let lines = human_lines(&headless, "window", sock);
        assert!(
            lines[0].starts_with("no usable graphical session"),
            "{lines:?}"
        );
        assert_eq!(lines.len(), 3);
    }
}
