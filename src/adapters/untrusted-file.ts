import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

/** A file an untrusted process could have left, as read: missing, its bytes, or refused (why, one phrase). */
export type UntrustedRead = { readonly kind: 'missing' } | { readonly kind: 'read'; readonly bytes: Buffer } | { readonly kind: 'refused'; readonly why: string };

/**
 * A file an agent or the code under test may have written, read without trusting it: a symlink is
 * never followed (`O_NOFOLLOW`), a FIFO never blocks (`O_NONBLOCK`), anything but a regular file of
 * at most `maxBytes` is refused.
 */
export function readUntrustedFile(path: string, maxBytes: number): UntrustedRead {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'missing' };
    return { kind: 'refused', why: code === 'ELOOP' ? 'it is a symlink' : code ?? 'error' };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { kind: 'refused', why: 'it is not a regular file' };
    if (st.size > maxBytes) return { kind: 'refused', why: `it is ${st.size} bytes, over ${maxBytes}` };
    const buf = Buffer.alloc(st.size);
    let at = 0;
    while (at < buf.length) {
      const n = readSync(fd, buf, at, buf.length - at, at);
      if (n === 0) break;
      at += n;
    }
    return { kind: 'read', bytes: buf.subarray(0, at) };
  } finally {
    closeSync(fd);
  }
}
