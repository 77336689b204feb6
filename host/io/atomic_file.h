#pragma once
/// @file atomic_file.h
/// The one way octwalk writes a file (snapshots, checkpoints, CSV, JSON, reports, sidecars):
/// a temporary created exclusively in the target directory (O_CREAT | O_EXCL with a unique name, so
/// no existing file, directory or symlink is ever followed or touched), every write checked, fsync,
/// atomic rename into place, fsync of the directory. On any error the temporary is removed and a
/// FormatError names the path and the system's reason; the final name then still holds what it held.

#include <functional>
#include <string>

namespace octwalk {

/// What to do when the final path already exists.
enum class Existing
{
    Refuse,  ///< FormatError (checked before anything is written, and again before the rename)
    Replace, ///< replace it atomically
    /// once the new file is complete and synced, make the old one path + ".prev" (a hard link renamed
    /// into place) and rename the new one over path: path exists, whole, at every moment
    KeepAsPrev,
};

class AtomicFile
{
public:
    /// Creates the temporary beside path. FormatError when path exists and `existing` is Refuse, or
    /// the directory cannot take a new file.
    AtomicFile(std::string path, Existing existing = Existing::Refuse);
    /// Removes the temporary unless commit() succeeded.
    ~AtomicFile();
    AtomicFile(const AtomicFile&)            = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    /// Appends bytes; FormatError (naming the path and errno's text) on a short or failed write.
    void write(const void* data, size_t bytes);
    void write(const std::string& text) { write(text.data(), text.size()); }

    /// Syncs and closes the temporary, moves it into place and syncs the directory.
    void commit();

    /// Where the bytes go until commit(); for libraries that write a file by name (HDF5), which
    /// must then open it without O_EXCL (it exists, empty, created by this object).
    const std::string& temporaryPath() const { return temporary_; }

    const std::string& path() const { return path_; }

private:
    std::string path_, temporary_;
    Existing existing_;
    int fd_         = -1;
    bool committed_ = false;
};

/// Makes `target` a second name (hard link) of the file `existing`, replacing what target held in one
/// rename (a link under a unique temporary name, renamed over target), then syncs the directory; both
/// in one directory. A kill leaves target either as it was or the new link. FormatError on failure.
void linkAtomically(const std::string& existing, const std::string& target);

/// Writes `bytes` to path through an AtomicFile.
void writeFileAtomically(const std::string& path, const std::string& bytes, Existing existing = Existing::Refuse);

/// For writers that open the file by name themselves: calls writeTo(temporary) and commits.
void writeFileAtomically(const std::string& path, Existing existing,
                         const std::function<void(const std::string& temporary)>& writeTo);

} // namespace octwalk
