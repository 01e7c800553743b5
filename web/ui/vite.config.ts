// The dashboard is served by hpo-scheduler under a strict CSP (script-src and
// style-src 'self', no inline code), so the build emits only external files:
// no inlined module-preload polyfill, no inlined assets beyond data: images.
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
  },
  server: {
    proxy: { '/api': process.env.HPO_API ?? 'http://127.0.0.1:8080' },
  },
});
