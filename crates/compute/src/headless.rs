//! Keeping a headless machine's Vulkan start-up quiet.
//!
//! Mesa installs an implicit Vulkan layer, `VK_LAYER_MESA_device_select`, that orders the
//! GPUs by the display the process draws on. Releases such as Debian 12's Mesa 22.3 ask
//! Wayland for that display whenever the instance enables the Wayland surface extension,
//! which wgpu does wherever the driver offers it; so while wgpu enumerates adapters the layer
//! calls `wl_display_connect`, and without `XDG_RUNTIME_DIR` (a batch job, a container, CI,
//! an ssh session without a login manager) libwayland prints `error: XDG_RUNTIME_DIR is
//! invalid or not set in the environment.`, twice, in the words wgpipe uses for its own
//! errors. (Later Mesa asks Wayland only when `WAYLAND_DISPLAY` or `WAYLAND_SOCKET` is set.)
//! Where there is no display and nobody asked the layer to choose a GPU it has nothing to
//! do, so [`quiet_vulkan_display_probe`] turns it off, as the layer's manifest allows
//! (`NODEVICE_SELECT`: the Vulkan loader disables the layer when the variable is set at
//! all). The library never calls it: the environment belongs to the program, which calls it
//! first in `main` (the `wgpipe` binary and `cargo xtask` do). A program that sets its
//! environment its own way (the Python package, through `os.environ` when it is imported)
//! asks [`display_probe_unwanted`] first.

use std::ffi::OsString;

/// Variables that ask the layer for a GPU or say there is a display to draw on: with any
/// of them set, the layer stays. (Besides these the probe reads `NODEVICE_SELECT` and
/// `XDG_RUNTIME_DIR`.)
pub const LAYER_WANTED: [&str; 6] = [
    "MESA_VK_DEVICE_SELECT",
    "MESA_VK_DEVICE_SELECT_FORCE_DEFAULT_DEVICE",
    "DRI_PRIME",
    "WAYLAND_DISPLAY",
    "WAYLAND_SOCKET",
    "DISPLAY",
];

/// Whether the layer should be turned off, given how the environment reads `name`: nobody
/// set `NODEVICE_SELECT` or asked for a GPU or a display, and `XDG_RUNTIME_DIR` is what
/// libwayland calls invalid (unset, or not an absolute path).
fn turn_off(var: impl Fn(&str) -> Option<OsString>) -> bool {
    var("NODEVICE_SELECT").is_none()
        && LAYER_WANTED.iter().all(|name| var(name).is_none_or(|v| v.is_empty()))
        && !var("XDG_RUNTIME_DIR").is_some_and(|dir| dir.as_encoded_bytes().starts_with(b"/"))
}

/// Whether this process's environment is one where [`quiet_vulkan_display_probe`] turns
/// Mesa's device-select layer off (by setting `NODEVICE_SELECT=1`): no display, nothing asked
/// the layer for a GPU, `XDG_RUNTIME_DIR` what libwayland calls invalid.
pub fn display_probe_unwanted() -> bool {
    turn_off(|name| std::env::var_os(name))
}

/// Turns Mesa's device-select layer off for this process (sets `NODEVICE_SELECT=1`) on a
/// machine with no display where nothing asked the layer for a GPU; elsewhere does nothing.
/// The layer only orders the GPUs, which wgpu then lists in the Vulkan loader's order;
/// wgpipe's adapter indices do not change (it orders adapters by backend, name and PCI bus).
///
/// # Safety
///
/// No other thread may exist yet (it changes the environment): call it first in `main`.
#[expect(unsafe_code, reason = "std::env::set_var is sound only while no other thread reads the environment")]
pub unsafe fn quiet_vulkan_display_probe() {
    if display_probe_unwanted() {
        // SAFETY: the caller guarantees that no other thread exists.
        unsafe { std::env::set_var("NODEVICE_SELECT", "1") };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| OsString::from(v))
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
        assert!(
            !turn_off(env(&[("NODEVICE_SELECT", "0")])),
            "set at all, it is the user's: it already turns the layer off"
        );
    }
}
