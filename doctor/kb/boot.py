"""The kernel's boot configuration rules that keep a module from loading, and the commands
that change it, with their sources."""

from __future__ import annotations

# Kernel command-line parameters that keep a module from loading: module_blacklist (kernel,
# https://docs.kernel.org/admin-guide/kernel-parameters.html), modprobe.blacklist (kmod,
# https://man7.org/linux/man-pages/man5/modprobe.d.5.html), rd.driver.blacklist (dracut).
BLACKLIST_PARAMS = ("module_blacklist", "modprobe.blacklist", "rd.driver.blacklist")
MODPROBE_GLOB = "/etc/modprobe.d/*.conf"
# Editing the kernel command line on a GRUB system (Debian/Ubuntu's update-grub).
GRUB_COMMANDS = ("sudoedit /etc/default/grub", "sudo update-grub", "sudo reboot")
