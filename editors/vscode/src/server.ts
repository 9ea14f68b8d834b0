// Where the `tracelens` binary comes from: the `tracelens.path` setting, else the binary shipped
// inside the .vsix (linux-x64 only), else `tracelens` on PATH.

import * as fs from 'fs';
import * as path from 'path';

export type ServerSource = 'setting' | 'bundled' | 'PATH';

export interface FoundServer {
  command: string;
  source: ServerSource;
}

export interface NotFound {
  /** What was looked at, for the error message and the output channel. */
  tried: string[];
  /** `tracelens.path` was set but does not name an executable file. */
  badSetting?: string;
}

const exe = process.platform === 'win32' ? 'tracelens.exe' : 'tracelens';

function isExecutableFile(p: string): boolean {
  try {
    if (!fs.statSync(p).isFile()) {
      return false;
    }
    fs.accessSync(p, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** `~` and `${userHome}` in the setting mean the home directory, as elsewhere in VS Code. */
function expandHome(p: string): string {
  const home = process.env.HOME ?? process.env.USERPROFILE ?? '';
  if (p === '~' || p.startsWith('~/')) {
    return path.join(home, p.slice(1));
  }
  return p.replace(/\$\{userHome\}/g, home);
}

export function bundledServerPath(extensionPath: string): string | undefined {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    return undefined;
  }
  return path.join(extensionPath, 'server', exe);
}

export function findServer(
  setting: string,
  extensionPath: string,
  workspaceFolder: string | undefined,
): FoundServer | NotFound {
  const tried: string[] = [];
  const configured = setting.trim();
  if (configured !== '') {
    let p = expandHome(configured);
    if (!path.isAbsolute(p) && workspaceFolder !== undefined) {
      p = path.join(workspaceFolder, p);
    }
    if (isExecutableFile(p)) {
      return { command: p, source: 'setting' };
    }
    // A setting that names nothing is a mistake to report, not a reason to run another binary.
    return { tried: [`tracelens.path = ${configured} (${p}: not an executable file)`], badSetting: configured };
  }

  const bundled = bundledServerPath(extensionPath);
  if (bundled !== undefined) {
    if (fs.existsSync(bundled) && !isExecutableFile(bundled)) {
      // Some unzip paths drop the executable bit.
      try {
        fs.chmodSync(bundled, 0o755);
      } catch {
        // Reported below as not found.
      }
    }
    if (isExecutableFile(bundled)) {
      return { command: bundled, source: 'bundled' };
    }
    tried.push(`${bundled} (shipped with the extension: missing)`);
  } else {
    tried.push(`no binary is shipped for ${process.platform}-${process.arch} (only linux-x64)`);
  }

  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir === '') {
      continue;
    }
    const candidate = path.join(dir, exe);
    if (isExecutableFile(candidate)) {
      return { command: candidate, source: 'PATH' };
    }
  }
  tried.push('`tracelens` on PATH: not found');
  return { tried };
}

export function isFound(r: FoundServer | NotFound): r is FoundServer {
  return (r as FoundServer).command !== undefined;
}
