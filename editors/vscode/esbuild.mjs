// Bundles the extension and vscode-languageclient into dist/extension.js (the .vsix then needs
// no node_modules).
import * as esbuild from 'esbuild';

await esbuild.build({
  entryPoints: ['src/extension.ts'],
  bundle: true,
  outfile: 'dist/extension.js',
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  external: ['vscode'],
  sourcemap: true,
  minify: false,
  logLevel: 'warning',
});
