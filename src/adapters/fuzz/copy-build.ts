/**
 * A copy of a build for a fuzz case (its repository, `.longbuild`, the integrator and all), made
 * synchronously: `fs.promises.cp` took ~100 ms for a helios build's ~100 files (a thread-pool
 * round trip per step of every file), and a campaign makes one per case. Git's object files — in
 * the `objects/` of a git directory — are hard-linked instead of copied: git never changes one in
 * place (objects and packs are written to a temporary file and renamed, longbuild's own git
 * binding does the same, and gc is off), so a case that writes objects adds files of its own and
 * the source stays as it was. Everything else is copied with its mode and modification time (git's
 * index compares them), directories with their modes, symbolic links as they are.
 */
import { chmodSync, copyFileSync, existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readlinkSync, symlinkSync, utimesSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Copy the build at `from` to `to` (which must not exist; its parent is made); returns `to`. */
export function copyBuild(from: string, to: string): string {
  mkdirSync(dirname(to), { recursive: true });
  copyTree(from, to, 'elsewhere');
  return to;
}

/** A loose objects' directory: the first two hex digits of their names. */
const LOOSE = /^[0-9a-f]{2}$/;

/** Whether `dir` is a git directory (a repository's `.git`, a bare repository): HEAD, objects and refs. */
function isGitDir(dir: string): boolean {
  return existsSync(join(dir, 'HEAD')) && existsSync(join(dir, 'objects')) && existsSync(join(dir, 'refs'));
}

/** Where in a git directory's `objects` the directory being copied is: its loose objects and packs are immutable. */
type Place = 'elsewhere' | 'objects' | 'immutable';

/** The place of a subdirectory `name` of a directory at `place` (a git directory: `gitDir`). */
function placeOf(name: string, place: Place, gitDir: boolean): Place {
  if (gitDir) return name === 'objects' ? 'objects' : 'elsewhere';
  if (place === 'objects') return name === 'pack' || LOOSE.test(name) ? 'immutable' : 'elsewhere';
  return place;
}

function copyTree(from: string, to: string, place: Place): void {
  const mode = lstatSync(from).mode & 0o7777;
  mkdirSync(to, { mode });
  chmodSync(to, mode); // mkdir's mode is masked by the umask
  const gitDir = place === 'elsewhere' && isGitDir(from);
  for (const e of readdirSync(from, { withFileTypes: true })) {
    const source = join(from, e.name);
    const target = join(to, e.name);
    if (e.isDirectory()) copyTree(source, target, placeOf(e.name, place, gitDir));
    else if (e.isSymbolicLink()) symlinkSync(readlinkSync(source), target);
    else if (e.isFile()) {
      if (place === 'immutable' && linked(source, target)) continue;
      copyFileSync(source, target); // the mode comes along
      const st = lstatSync(source);
      utimesSync(target, st.atimeMs / 1000, st.mtimeMs / 1000);
    } else throw new Error(`cannot copy ${source} for a fuzz case: not a file, directory or symbolic link`);
  }
}

/** Hard-link `source` at `target`; false where links cannot be made (another file system): copy it then. */
function linked(source: string, target: string): boolean {
  try {
    linkSync(source, target);
    return true;
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'EXDEV' || code === 'EPERM' || code === 'EMLINK' || code === 'ENOTSUP') return false;
    throw err;
  }
}
