// The data directory viewer: a file list from the gateway's /files/, and h5web's App on
// the chosen file through the gateway's h5grove API on this same origin. The token (when
// the daemon has tokens) comes from ?token= or the form, and goes with every request as
// `Authorization: Bearer`.
import '@h5web/app/styles.css';
import './viewer.css';

import { App, H5GroveProvider, createBasicFetcher } from '@h5web/app';
import { StrictMode, useCallback, useEffect, useMemo, useState } from 'react';
import { createRoot } from 'react-dom/client';

// the API lies beside the page (h5web wants an absolute URL: it builds export links on it)
const API = window.location.origin + window.location.pathname.replace(/\/[^/]*$/, '');

function readParams() {
  const params = new URLSearchParams(window.location.search);
  return { token: params.get('token') ?? '', file: params.get('file') ?? '' };
}

// Keep the file (and token) in the address, so that a view can be reloaded or shared.
function writeParams(token, file) {
  const params = new URLSearchParams();
  if (token) params.set('token', token);
  if (file) params.set('file', file);
  const query = params.toString();
  window.history.replaceState(null, '', query ? `?${query}` : window.location.pathname);
}

async function listFiles(headers) {
  const response = await fetch(`${API}/files/`, { headers });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(body.message || `HTTP ${response.status}`);
    error.status = response.status;
    throw error;
  }
  return body;
}

function TokenForm({ message, onToken }) {
  const [value, setValue] = useState('');
  return (
    <form
      className="h5ark-token"
      onSubmit={(event) => {
        event.preventDefault();
        onToken(value.trim());
      }}
    >
      <p>{message}</p>
      <label>
        Token{' '}
        <input type="password" value={value} onChange={(e) => setValue(e.target.value)} />
      </label>{' '}
      <button type="submit">Open</button>
    </form>
  );
}

function Viewer() {
  const initial = useMemo(readParams, []);
  const [token, setToken] = useState(initial.token);
  const [file, setFile] = useState(initial.file);
  const [files, setFiles] = useState(null);
  const [error, setError] = useState(null);

  const headers = useMemo(() => (token ? { Authorization: `Bearer ${token}` } : {}), [token]);
  const fetcher = useMemo(() => createBasicFetcher({ headers }), [headers]);
  // a download link cannot send the header: the gateway's npy export gets the token in
  // its query; h5web's own exporters (CSV, JSON) need none
  const getExportURL = useCallback(
    (format, dataset, selection) => {
      if (!token || format !== 'npy') return undefined;
      const params = new URLSearchParams({ file, path: dataset.path, format, token });
      if (selection) params.set('selection', selection);
      return new URL(`${API}/data/?${params}`);
    },
    [token, file],
  );

  useEffect(() => {
    let live = true;
    setError(null);
    listFiles(headers).then(
      (list) => live && setFiles(list),
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [headers]);

  const choose = useCallback(
    (next) => {
      setFile(next);
      writeParams(token, next);
    },
    [token],
  );

  if (error && error.status === 401) {
    return (
      <TokenForm
        message={token ? 'The token is not valid.' : 'This daemon requires a token.'}
        onToken={(next) => {
          setToken(next);
          writeParams(next, file);
        }}
      />
    );
  }

  return (
    <div className="h5ark-viewer">
      <header className="h5ark-bar">
        <strong>h5ark</strong>
        <label>
          File{' '}
          <select
            aria-label="File"
            value={file}
            onChange={(event) => choose(event.target.value)}
          >
            <option value="">choose a file…</option>
            {(files || []).map((f) => (
              <option key={f} value={f}>
                {f}
              </option>
            ))}
          </select>
        </label>
        {error && <span className="h5ark-error">{error.message}</span>}
        {files && files.length === 0 && <span>The data directory holds no files.</span>}
      </header>
      <main className="h5ark-main">
        {file ? (
          <H5GroveProvider
            url={API}
            filepath={file}
            fetcher={fetcher}
            getExportURL={getExportURL}
            resetKeys={[token]}
          >
            <App key={file} />
          </H5GroveProvider>
        ) : (
          <p className="h5ark-hint">Choose a file of the data directory to browse it.</p>
        )}
      </main>
    </div>
  );
}

createRoot(document.getElementById('root')).render(
  <StrictMode>
    <Viewer />
  </StrictMode>,
);
