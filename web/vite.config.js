// The viewer page h5arkd serves at / of --http-endpoint. CMake runs `vite build` with
// H5ARK_WEB_OUT set to the build tree's server/web, beside h5arkd, where the daemon looks
// for the page; a plain `npm run build` writes dist/.
import { defineConfig } from 'vite';

export default defineConfig({
  base: './', // assets relative to the page: served at / or below a proxy's prefix
  esbuild: { jsx: 'automatic' },
  build: {
    outDir: process.env.H5ARK_WEB_OUT || 'dist',
    emptyOutDir: true,
    chunkSizeWarningLimit: 4096,
    rollupOptions: {
      // the data directory viewer, and a file through the HSDS endpoint (hsds.html)
      input: { index: 'index.html', hsds: 'hsds.html' },
      // h5web's dependencies mark React server components ("use client"): meaningless in
      // a page, and harmless
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
      },
    },
  },
});
