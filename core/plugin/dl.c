/*
 * dl.c - POSIX and Windows implementations of the loader shim (see dl.h).
 */
#if !defined(_WIN32) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* dladdr */
#endif
#include "plugin/dl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef _WIN32
#include <windows.h>
#else
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>
#endif
#ifdef __APPLE__
#include <mach-o/dyld.h>
#endif

#ifdef _WIN32

static void win_reason(DWORD code, char *err, size_t cap)
{
	DWORD n;

	if (!cap)
		return;
	n = FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL,
			   code, 0, err, (DWORD)cap, NULL);
	if (!n) {
		snprintf(err, cap, "error %lu", (unsigned long)code);
		return;
	}
	while (n && (err[n - 1] == '\r' || err[n - 1] == '\n' || err[n - 1] == ' '))
		err[--n] = 0;
}

void *strata_dl_open(const char *path, char *err, size_t cap)
{
	DWORD old_mode;
	HMODULE h;

	/* No "missing DLL" dialog box: a refused plugin is one log line. */
	SetThreadErrorMode(SEM_FAILCRITICALERRORS | SEM_NOOPENFILEERRORBOX, &old_mode);
	/* Dependencies are looked up beside the plugin, not beside strata.exe. */
	h = LoadLibraryExA(path, NULL, LOAD_WITH_ALTERED_SEARCH_PATH);
	if (!h) {
		char *ins;

		win_reason(GetLastError(), err, cap);
		/* Some messages have an insert for the module ("Bad EXE format
		 * for %1."): the caller names the file already. */
		if (cap && (ins = strstr(err, " for %1")) != NULL)
			memmove(ins, ins + 7, strlen(ins + 7) + 1);
		else if (cap && (ins = strstr(err, "%1")) != NULL)
			memcpy(ins, "it", 2);
	}
	SetThreadErrorMode(old_mode, NULL);
	return (void *)h;
}

void *strata_dl_sym(void *handle, const char *name)
{
	FARPROC p = GetProcAddress((HMODULE)handle, name);
	void *out;

	memcpy(&out, &p, sizeof(out));
	return out;
}

void strata_dl_close(void *handle)
{
	if (handle)
		FreeLibrary((HMODULE)handle);
}

int strata_dl_list_dir(const char *dir, strata_dl_dir_fn fn, void *user)
{
	WIN32_FIND_DATAA fd;
	char pattern[MAX_PATH];
	HANDLE h;
	int rc = 0;

	if (snprintf(pattern, sizeof(pattern), "%s\\*", dir) >= (int)sizeof(pattern))
		return -ENAMETOOLONG;
	h = FindFirstFileA(pattern, &fd);
	if (h == INVALID_HANDLE_VALUE)
		return GetLastError() == ERROR_FILE_NOT_FOUND ? 0 : -ENOENT;
	do {
		if (!strcmp(fd.cFileName, ".") || !strcmp(fd.cFileName, ".."))
			continue;
		rc = fn(user, fd.cFileName);
	} while (!rc && FindNextFileA(h, &fd));
	FindClose(h);
	return rc;
}

char *strata_dl_self_exe(void)
{
	char buf[MAX_PATH];
	DWORD n = GetModuleFileNameA(NULL, buf, sizeof(buf));

	if (!n || n >= sizeof(buf))
		return NULL;
	return _strdup(buf);
}

char *strata_dl_self_lib(void)
{
	char buf[MAX_PATH];
	HMODULE m = NULL;
	DWORD n;

	if (!GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS |
				GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
				(LPCSTR)(void *)strata_dl_self_lib, &m))
		return NULL;
	n = GetModuleFileNameA(m, buf, sizeof(buf));
	if (!n || n >= sizeof(buf))
		return NULL;
	return _strdup(buf);
}

char *strata_dl_realpath(const char *path)
{
	struct _stat st;

	if (_stat(path, &st) != 0)
		return NULL;
	return _fullpath(NULL, path, 0);
}

int strata_dl_check_file(const char *path)
{
	struct _stat st;

	if (_stat(path, &st) != 0)
		return -errno;
	return (st.st_mode & _S_IFMT) == _S_IFREG ? 0 : -EISDIR;
}

#else /* POSIX */

/* The system's message often starts with the path again; the caller already names it. */
static void copy_reason(char *err, size_t cap, const char *msg, const char *path)
{
	size_t n = strlen(path);

	if (!cap)
		return;
	if (!msg)
		msg = "unknown error";
	if (strncmp(msg, path, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ')
		msg += n + 2;
	snprintf(err, cap, "%s", msg);
}

void *strata_dl_open(const char *path, char *err, size_t cap)
{
	char local[4096];
	const char *p = path;
	void *h;

	/* dlopen() searches the library path for a name without '/'. */
	if (!strchr(path, '/')) {
		if (snprintf(local, sizeof(local), "./%s", path) >= (int)sizeof(local)) {
			copy_reason(err, cap, "path too long", path);
			return NULL;
		}
		p = local;
	}
	/*
	 * RTLD_NOW: an unresolved symbol is refused at load time with the
	 * file's name.  RTLD_LOCAL: two plugins may use the same static names.
	 */
	h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		copy_reason(err, cap, dlerror(), p);
	return h;
}

void *strata_dl_sym(void *handle, const char *name)
{
	dlerror();
	return dlsym(handle, name);
}

void strata_dl_close(void *handle)
{
	if (handle)
		dlclose(handle);
}

int strata_dl_list_dir(const char *dir, strata_dl_dir_fn fn, void *user)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int rc = 0;

	if (!d)
		return -errno;
	while (!rc && (de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		rc = fn(user, de->d_name);
	}
	closedir(d);
	return rc;
}

char *strata_dl_self_exe(void)
{
#if defined(__linux__)
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

	if (n <= 0)
		return NULL;
	buf[n] = 0;
	return strdup(buf);
#elif defined(__APPLE__)
	char buf[PATH_MAX];
	uint32_t size = sizeof(buf);

	if (_NSGetExecutablePath(buf, &size) != 0)
		return NULL;
	return realpath(buf, NULL);
#else
	return NULL;
#endif
}

char *strata_dl_realpath(const char *path)
{
	return realpath(path, NULL);
}

char *strata_dl_self_lib(void)
{
	Dl_info info;

	if (!dladdr((void *)strata_dl_self_lib, &info) || !info.dli_fname)
		return NULL;
	return strata_dl_realpath(info.dli_fname);
}

int strata_dl_check_file(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return -errno;
	return S_ISREG(st.st_mode) ? 0 : -EISDIR;
}

#endif
