// A file through the HSDS endpoint (--hsds-endpoint) with h5web's HSDS provider, as any
// HSDS client sees it: hsds.html?endpoint=http://HOST:PORT&file=/DOMAIN[&user=U&token=T].
// The endpoint is another origin than this page's: it answers with CORS headers.
import '@h5web/app/styles.css';
import './viewer.css';

import { App, HsdsProvider, buildBasicAuthHeader, createBasicFetcher } from '@h5web/app';
import { StrictMode, useMemo } from 'react';
import { createRoot } from 'react-dom/client';

function HsdsViewer() {
  const params = useMemo(() => new URLSearchParams(window.location.search), []);
  const endpoint = params.get('endpoint') ?? '';
  const file = params.get('file') ?? '';
  const token = params.get('token') ?? '';
  const fetcher = useMemo(
    () =>
      createBasicFetcher({
        headers: token ? buildBasicAuthHeader(params.get('user') || 'h5web', token) : {},
      }),
    [params, token],
  );
  if (!endpoint || !file) {
    return <p className="h5ark-hint">Give ?endpoint=http://HOST:PORT&amp;file=/DOMAIN.</p>;
  }
  return (
    <div className="h5ark-viewer">
      <header className="h5ark-bar">
        <strong>h5ark</strong> <span>{file}</span> <span>(HSDS endpoint {endpoint})</span>
      </header>
      <main className="h5ark-main">
        <HsdsProvider url={endpoint} filepath={file} fetcher={fetcher}>
          <App />
        </HsdsProvider>
      </main>
    </div>
  );
}

createRoot(document.getElementById('root')).render(
  <StrictMode>
    <HsdsViewer />
  </StrictMode>,
);
