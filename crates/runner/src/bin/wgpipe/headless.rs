//! Keeping a headless machine's Vulkan start-up quiet.
//!
//! Mesa installs an implicit Vulkan layer, `VK_LAYER_MESA_device_select`, that orders the
//! GPUs by the display the process draws on. wgpu enables the Wayland surface extension
//! wherever the driver offers it, so while wgpu enumerates adapters the layer calls
//! `wl_display_connect`; without `XDG_RUNTIME_DIR` (a batch job, a container, CI, an ssh
//! session without a login manager) libwayland prints `error: XDG_RUNTIME_DIR is invalid or
//! not set in the environment.`, twice, in the words wgpipe uses for its own errors. Where
//! there is no display and nobody asked the layer to choose a GPU it has nothing to do, so
//! the binary turns it off, as the layer's manifest allows (`NODEVICE_SELECT=1`). The
//! library leaves the environment alone: it belongs to the embedding program.

/// Variables that ask the layer for a GPU or say there is a display to draw on: with any
/// of them set, the layer stays.
const LAYER_WANTED: [&str; 5] =
    ["MESA_VK_DEVICE_SELECT", "MESA_VK_DEVICE_SELECT_FORCE_DEFAULT_DEVICE", "DRI_PRIME", "WAYLAND_DISPLAY", "DISPLAY"];

/// Whether the layer should be turned off, given how the environment reads `name`: nobody
/// set `NODEVICE_SELECT` or asked for a GPU or a display, and `XDG_RUNTIME_DIR` is what
/// libwayland calls invalid (unset, or not an absolute path).
fn turn_off(var: impl Fn(&str) -> Option<String>) -> bool {
    var("NODEVICE_SELECT").is_none()
        && LAYER_WANTED.iter().all(|name| var(name).is_none_or(|v| v.is_empty()))
        && !var("XDG_RUNTIME_DIR").is_some_and(|dir| dir.starts_with('/'))
}

/// Turns the layer off for this process on a machine with no display where nothing asked
/// the layer for a GPU. Must run before any thread starts (the first line of `main`).
#[allow(unsafe_code, reason = "std::env::set_var, sound only before other threads exist: see the SAFETY note")]
pub fn quiet_vulkan_display_probe() {
    if turn_off(|name| std::env::var(name).ok()) {
        // SAFETY: called first in `main`, before any other thread exists, so nothing reads
        // the environment concurrently.
        unsafe { std::env::set_var("NODEVICE_SELECT", "1") };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned())
    }

    #[test]
    fn a_headless_environment_turns_the_layer_off() {
        assert!(turn_off(env(&[("HOME", "/root")])));
        assert!(turn_off(env(&[("XDG_RUNTIME_DIR", "")])), "an empty directory is libwayland's 'invalid'");
        assert!(turn_off(env(&[("XDG_RUNTIME_DIR", "run/user/0")])), "so is a relative one");
    }

    #[test]
    fn a_display_a_runtime_dir_or_a_request_keeps_it() {
        for name in LAYER_WANTED {
            assert!(!turn_off(env(&[(name, "1")])), "{name}");
        }
        assert!(!turn_off(env(&[("XDG_RUNTIME_DIR", "/run/user/0")])));
        assert!(!turn_off(env(&[("NODEVICE_SELECT", "0")])), "the user's own setting stays");
    }
}
