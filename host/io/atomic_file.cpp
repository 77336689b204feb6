#include "host/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "common/errors.h"

namespace octwalk {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& path, const std::string& what, int error)
{
    throw FormatError("'" + path + "': " + what + ": " + std::strerror(error));
}

bool exists(const std::string& path)
{
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0;
}

std::string directoryOf(const std::string& path)
{
    fs::path parent = fs::path(path).parent_path();
    return parent.empty() ? std::string(".") : parent.string();
}

void syncDirectory(const std::string& path)
{
    int fd = ::open(directoryOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return; // some file systems do not let a directory be opened; the rename stands
    ::fsync(fd);
    ::close(fd);
}

void refuseExisting(const std::string& path)
{
    if (exists(path)) throw FormatError("'" + path + "' already exists; refusing to overwrite it");
}

/// Makes path + ".prev" a second name of the current file without ever removing path: a hard link under
/// a unique temporary name, renamed over the old ".prev", then the directory synced. A kill at any point
/// leaves path whole (and ".prev" either the older or the current file), so the caller's rename of the
/// new file over path is the only change to path. A file system without hard links is a FormatError.
void keepAsPrev(const std::string& path) { linkAtomically(path, path + ".prev"); }

} // namespace

void linkAtomically(const std::string& existing, const std::string& target)
{
    std::string link;
    for (int attempt = 0; link.empty(); ++attempt)
    {
        std::string name = target + ".tmp.XXXXXX";
        std::vector<char> buffer(name.begin(), name.end());
        buffer.push_back('\0');
        int fd = ::mkstemp(buffer.data()); // reserves a unique name
        if (fd < 0) fail(target, "cannot create a temporary name in '" + directoryOf(target) + "'", errno);
        ::close(fd);
        ::unlink(buffer.data());
        if (::link(existing.c_str(), buffer.data()) == 0) link = buffer.data();
        else if (errno != EEXIST || attempt > 100) fail(target, "cannot link '" + existing + "' to it", errno);
    }
    if (::rename(link.c_str(), target.c_str()) != 0)
    {
        int error = errno;
        ::unlink(link.c_str());
        fail(target, "cannot link '" + existing + "' to it", error);
    }
    // When target already was a name of `existing` (after a restart from checkpoint.bin.prev), rename()
    // does nothing and leaves the temporary name: target is what was asked, the temporary goes.
    if (exists(link)) ::unlink(link.c_str());
    syncDirectory(target);
}

AtomicFile::AtomicFile(std::string path, Existing existing) : path_(std::move(path)), existing_(existing)
{
    if (path_.empty()) throw FormatError("output path is empty");
    if (existing_ == Existing::Refuse) refuseExisting(path_);
    // mkstemp: O_CREAT | O_EXCL with a unique name, mode 0600; widened below to what a plain
    // create would give under the umask, since outputs are meant to be read by others.
    std::string name = path_ + ".tmp.XXXXXX";
    std::vector<char> buffer(name.begin(), name.end());
    buffer.push_back('\0');
    fd_ = ::mkstemp(buffer.data());
    if (fd_ < 0) fail(path_, "cannot create a temporary file in '" + directoryOf(path_) + "'", errno);
    temporary_  = buffer.data();
    mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd_, 0666 & ~mask);
}

AtomicFile::~AtomicFile()
{
    if (fd_ >= 0) ::close(fd_);
    if (!committed_ && !temporary_.empty()) ::unlink(temporary_.c_str());
}

void AtomicFile::write(const void* data, size_t bytes)
{
    const char* p = static_cast<const char*>(data);
    while (bytes > 0)
    {
        ssize_t n = ::write(fd_, p, bytes);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail(path_, "write failed", n < 0 ? errno : ENOSPC);
        p += n;
        bytes -= size_t(n);
    }
}

void AtomicFile::commit()
{
    if (::fsync(fd_) != 0) fail(path_, "fsync failed", errno);
    int fd = fd_;
    fd_    = -1;
    if (::close(fd) != 0) fail(path_, "close failed", errno);
    if (existing_ == Existing::Refuse) refuseExisting(path_);
    if (existing_ == Existing::KeepAsPrev && exists(path_)) keepAsPrev(path_);
    if (::rename(temporary_.c_str(), path_.c_str()) != 0) fail(path_, "cannot rename the temporary into place", errno);
    committed_ = true;
    syncDirectory(path_);
}

void writeFileAtomically(const std::string& path, const std::string& bytes, Existing existing)
{
    AtomicFile f(path, existing);
    f.write(bytes);
    f.commit();
}

void writeFileAtomically(const std::string& path, Existing existing,
                         const std::function<void(const std::string& temporary)>& writeTo)
{
    AtomicFile f(path, existing);
    writeTo(f.temporaryPath());
    f.commit();
}

} // namespace octwalk
