//! Which display surface a VM gets: a QEMU window on a graphical host, VNC otherwise.
//!
//! Implements stoat-json-v3 "VM.display" and the detection order of upstream facts §4.

use stoat_wire::dto::Display;

use crate::Env;

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
}
