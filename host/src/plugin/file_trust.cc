// check_trusted_plugin_file: the permission and ownership checks run before any dlopen().
// See file_trust.h for the rules and why they exist.
#include "plugin/file_trust.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

namespace warren::plugin {
namespace {

namespace fs = std::filesystem;

// Appends rather than `"\"" + path.string()`: GCC 12 at -O3 reports a false -Wrestrict inside
// std::string's insert for that form.
std::string quoted(const fs::path& path) {
  std::string text = "\"";
  text += path.string();
  text += '"';
  return text;
}

std::string octal_mode(mode_t mode) {
  char text[16];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// Who may own plugin files: root, and the user the host runs as.
std::string trusted_owners() {
  const uid_t self = geteuid();
  return self == 0 ? "root" : "root or uid " + std::to_string(self);
}

bool is_trusted_owner(uid_t owner) {
  return owner == 0 || owner == geteuid();
}

// Who besides the owner may write: "group", "others", "group and others", or "" for nobody.
std::string foreign_writers(mode_t mode) {
  const bool group = (mode & S_IWGRP) != 0;
  const bool others = (mode & S_IWOTH) != 0;
  if (group && others)
    return "group and others";
  if (group)
    return "group";
  if (others)
    return "others";
  return "";
}

std::string untrusted_owner_text(uid_t owner) {
  const uid_t self = geteuid();
  if (self == 0)
    return "owned by uid " + std::to_string(owner) + ", not by root";
  return "owned by uid " + std::to_string(owner) + ", neither root nor the running user (uid " +
         std::to_string(self) + ")";
}

std::string symlink_target(const fs::path& link) {
  std::error_code error;
  const fs::path target = fs::read_symlink(link, error);
  return error ? "an unreadable target" : quoted(target);
}

std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISSOCK(mode))
    return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return "a device";
  return "not a regular file";
}

// The meaningful components of a path: "/", then each name; "." and empty ones dropped.
std::vector<fs::path> components(const fs::path& path) {
  std::vector<fs::path> parts;
  for (const fs::path& part : path) {
    if (!part.empty() && part != ".")
      parts.push_back(part);
  }
  return parts;
}

// `description` names the directory in messages: `the plugin directory "/opt/p"`.
void check_directory(const fs::path& directory, const std::string& description,
                     const fs::path& file) {
  struct stat status {};
  if (::lstat(directory.c_str(), &status) != 0) {
    const int error = errno;
    if (error == ENOENT)
      throw PluginLoadError(file, "refused: " + description + " does not exist");
    throw PluginLoadError(file,
                          "refused: cannot inspect " + description + ": " + std::strerror(error));
  }
  if (S_ISLNK(status.st_mode)) {
    throw PluginLoadError(file, "refused: " + description + " is a symlink (to " +
                                    symlink_target(directory) +
                                    "); configure the real directory instead");
  }
  if (!S_ISDIR(status.st_mode)) {
    throw PluginLoadError(file, "refused: " + description + " is not a directory");
  }
  if (const std::string writers = foreign_writers(status.st_mode); !writers.empty()) {
    throw PluginLoadError(file, "refused: " + description + " is writable by " + writers +
                                    " (mode " + octal_mode(status.st_mode) +
                                    "); make it 0755 and owned by " + trusted_owners());
  }
  if (!is_trusted_owner(status.st_uid)) {
    throw PluginLoadError(file, "refused: " + description + " is " +
                                    untrusted_owner_text(status.st_uid) + "; chown it to " +
                                    trusted_owners());
  }
}

// The plugins `directory` holds (lib<name>.so), for a "not found" that shows what a misspelt
// name was meant to be: " (the directory holds order_email, sales_ranking)".
std::string plugins_held_by(const fs::path& directory) {
  constexpr std::size_t kShown = 12;
  std::vector<std::string> names;
  std::error_code error;
  for (fs::directory_iterator entry(directory, error), end; !error && entry != end;
       entry.increment(error)) {
    const std::string file_name = entry->path().filename().string();
    if (file_name.size() > 6 && file_name.starts_with("lib") && file_name.ends_with(".so"))
      names.push_back(file_name.substr(3, file_name.size() - 6));
  }
  if (error)
    return {};
  if (names.empty())
    return " (the directory holds no lib<name>.so)";
  std::sort(names.begin(), names.end());
  std::string text = " (the directory holds ";
  for (std::size_t i = 0; i < names.size() && i < kShown; ++i)
    text += (i == 0 ? "" : ", ") + names[i];
  if (names.size() > kShown)
    text += " and " + std::to_string(names.size() - kShown) + " more";
  return text + ")";
}

void check_plugin_file(const fs::path& path, const fs::path& file) {
  struct stat status {};
  if (::lstat(path.c_str(), &status) != 0) {
    const int error = errno;
    if (error == ENOENT) {
      throw PluginLoadError(file,
                            "not found: no such file; build the plugin or check its name and "
                            "directory" +
                                plugins_held_by(path.parent_path()));
    }
    throw PluginLoadError(file, std::string("refused: cannot inspect it: ") + std::strerror(error));
  }
  if (S_ISLNK(status.st_mode)) {
    throw PluginLoadError(file, "refused: it is a symlink (to " + symlink_target(path) +
                                    "); copy the real file into the plugin directory");
  }
  if (!S_ISREG(status.st_mode)) {
    throw PluginLoadError(file,
                          "refused: not a regular file (it is " + file_kind(status.st_mode) + ")");
  }
  if (const std::string writers = foreign_writers(status.st_mode); !writers.empty()) {
    throw PluginLoadError(file, "refused: writable by " + writers + " (mode " +
                                    octal_mode(status.st_mode) +
                                    "); make it 0755 or 0644 and owned by " + trusted_owners());
  }
  if (!is_trusted_owner(status.st_uid)) {
    throw PluginLoadError(file, "refused: " + untrusted_owner_text(status.st_uid) +
                                    "; chown it to " + trusted_owners());
  }
}

}  // namespace

void check_trusted_plugin_file(const fs::path& plugin_dir, const fs::path& file) {
  if (!plugin_dir.is_absolute()) {
    throw PluginLoadError(file, "refused: the plugin directory " + quoted(plugin_dir) +
                                    " is not an absolute path; configure an absolute path");
  }
  const fs::path path = file.is_absolute() ? file : plugin_dir / file;

  // Containment is decided on the path's components, never by resolving it: the file's path
  // must start with the plugin directory's and continue with plain names only.
  const std::vector<fs::path> dir_parts = components(plugin_dir);
  const std::vector<fs::path> file_parts = components(path);
  const bool starts_with_dir = file_parts.size() > dir_parts.size() &&
                               std::equal(dir_parts.begin(), dir_parts.end(), file_parts.begin());
  if (!starts_with_dir) {
    throw PluginLoadError(file,
                          "refused: it is outside the plugin directory " + quoted(plugin_dir));
  }
  const auto inside_begin = file_parts.begin() + static_cast<std::ptrdiff_t>(dir_parts.size());
  if (std::find(inside_begin, file_parts.end(), fs::path("..")) != file_parts.end()) {
    throw PluginLoadError(file,
                          "refused: its path contains \"..\", which could leave the plugin "
                          "directory " +
                              quoted(plugin_dir) +
                              "; name the file by its plain path inside that directory");
  }

  check_directory(plugin_dir, "the plugin directory " + quoted(plugin_dir), file);
  fs::path directory = plugin_dir;
  for (auto part = inside_begin; part + 1 != file_parts.end(); ++part) {
    directory /= *part;
    check_directory(directory, "its directory " + quoted(directory), file);
  }
  check_plugin_file(path, file);
}

}  // namespace warren::plugin
