//! Reaching the model: the transport for the configured provider (recording it when asked),
//! and the model's name, discovered from the server's listing for `dynamo/default`; the
//! listing's context window (`max_model_len`) is used for `dynamo/<id>` too.

use futures_util::future::join_all;

use super::*;

impl Session {
    /// [`Session::connect`], with every extension's [`Extension::prepare`] running alongside:
    /// startup takes as long as the slowest of them, not their sum. A stop (a signal, the
    /// budget) drops the preparations still running.
    pub(super) async fn connect_and_prepare(
        &mut self,
    ) -> Result<(Arc<dyn Transport>, String, String), FatalError> {
        // A child run asks over its parent's connection.
        if let Some(parent) = &self.config.parent {
            let connected = parent.connected.clone();
            self.state.target = connected.transport.target();
            self.state.context_window = connected.context_window;
            return Ok((connected.transport, connected.provider, connected.model));
        }
        let extensions = self.config.extensions.clone();
        let control = self.config.control.clone();
        let prepared = async {
            tokio::select! {
                _ = join_all(extensions.iter().map(|extension| extension.prepare())) => {}
                () = control.aborted() => {}
            }
        };
        let (connected, ()) = tokio::join!(self.connect(), prepared);
        connected
    }

    /// Picks the transport and the model name (discovering it when asked to).
    pub(super) async fn connect(
        &mut self,
    ) -> Result<(Arc<dyn Transport>, String, String), FatalError> {
        let mut discovered_window = None;
        let provider = self.config.model.provider_name().to_string();
        let (transport, model): (Arc<dyn Transport>, String) = match &self.config.model {
            ModelSource::Replay { fixture, .. } => (
                Arc::new(ReplayTransport::new(fixture.clone())),
                fixture.header.model.clone(),
            ),
            ModelSource::Http {
                provider,
                endpoint,
                model,
            } => {
                let internal = |message: String| FatalError {
                    kind: FatalErrorKind::Internal,
                    message,
                };
                if let (None, Some(var)) = (&endpoint.api_key, &endpoint.required_key) {
                    return Err(FatalError {
                        kind: FatalErrorKind::Auth,
                        message: format!("{var} is not set"),
                    });
                }
                // Plain-http endpoints (a local Dynamo) need no CA store.
                let tls = endpoint.base_url.starts_with("https://");
                let client = crate::http::client(self.config.limits.connect_timeout, tls)
                    .map_err(|e| internal(e.to_string()))?;
                let model = match model {
                    Some(model) => {
                        if provider.dynamo && self.config.limits.context_window.is_none() {
                            discovered_window = self.listed_window(&client, endpoint, model).await;
                        }
                        model.clone()
                    }
                    None => {
                        let listed = self.discover(&client, endpoint).await?;
                        discovered_window = listed.context_window;
                        listed.id
                    }
                };
                let dialect = provider.dialect;
                let transport = HttpTransport::new(
                    client,
                    dialect.url(&endpoint.base_url),
                    dialect.auth(endpoint.api_key.clone()),
                );
                (Arc::new(transport), model)
            }
        };
        let transport = match &self.config.record {
            None => transport,
            Some(path) => {
                let header = FixtureHeader {
                    worker_fixture: FIXTURE_VERSION,
                    provider: provider.clone(),
                    model: model.clone(),
                    recorded_at: Some(now_rfc3339()),
                    api: Some(self.config.model.dialect().api_name().to_string()),
                };
                let secrets = self.config.secrets.clone();
                let recorder =
                    Recorder::create(path, &header, secrets).map_err(|err| FatalError {
                        kind: FatalErrorKind::Internal,
                        message: format!("cannot write --record file {}: {err}", path.display()),
                    })?;
                let recorder = Arc::new(recorder);
                self.recorder = Some(recorder.clone());
                Arc::new(RecordingTransport::new(transport, recorder))
            }
        };
        self.state.target = transport.target();
        self.state.context_window = self
            .config
            .limits
            .context_window
            .or(discovered_window)
            .or_else(|| crate::llm::known_context_window(&model));
        Ok((transport, provider, model))
    }

    /// `dynamo/<id>`: the context window the server lists for the model, as for
    /// `dynamo/default`. One try, within the discovery timeout: a server that lists nothing
    /// (or does not answer) leaves the window to the built-in table, and the run goes on.
    async fn listed_window(
        &self,
        client: &reqwest::Client,
        endpoint: &crate::config::Endpoint,
        model: &str,
    ) -> Option<u64> {
        let lookup = crate::llm::listed_window(
            client,
            &endpoint.base_url,
            endpoint.api_key.as_deref(),
            crate::config::defaults::DISCOVERY_TIMEOUT,
            model,
        );
        tokio::select! {
            () = self.config.control.aborted() => None,
            window = lookup => window,
        }
    }

    /// `dynamo/default`: the first model the server lists, retried like a chat request.
    pub(super) async fn discover(
        &self,
        client: &reqwest::Client,
        endpoint: &crate::config::Endpoint,
    ) -> Result<crate::llm::ListedModel, FatalError> {
        let policy = RetryPolicy::new(
            self.config.limits.max_retries,
            self.config.limits.retry_base_delay,
        );
        let control = &self.config.control;
        let fatal = |message: String| FatalError {
            kind: FatalErrorKind::ModelDiscovery,
            message,
        };
        let mut attempt = 0;
        loop {
            let found = tokio::select! {
                () = control.aborted() => return Err(fatal("aborted during model discovery".into())),
                found = first_model(client, &endpoint.base_url, endpoint.api_key.as_deref(), crate::config::defaults::DISCOVERY_TIMEOUT) => found,
            };
            let error = match found {
                Ok(model) => return Ok(model),
                Err(error) => error,
            };
            let Some(wait) = policy.next_wait(attempt, error.transient, None) else {
                let tries = match attempt {
                    0 => String::new(),
                    n => format!(" ({} attempts)", n + 1),
                };
                return Err(fatal(format!("{}{tries}", error.message)));
            };
            attempt += 1;
            tokio::select! {
                () = control.aborted() => return Err(fatal("aborted during model discovery".into())),
                () = tokio::time::sleep(wait) => {}
            }
        }
    }
}
