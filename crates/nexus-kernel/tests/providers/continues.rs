//! A continuation tells its adapter which encode it continues (`Provider::encode_continuing`),
//! and the bytes sent are still the sealed ones, round after round.

use std::sync::{Arc, Mutex};

use nexus_providers::{
    Anthropic, BlobReader, ChainMark, Continues, DeltaSink, EncodedRequest, ModelCapabilities, ModelRequest, OpenAi,
    Provider, ProviderError, SendFuture,
};

use super::*;

/// What one encode was told and what it gave.
#[derive(Debug, Clone)]
struct Seen {
    prior: Option<Continues>,
    entries: usize,
    mark: Option<ChainMark>,
}

/// A real adapter, recording every encode.
struct Recording {
    inner: Arc<dyn Provider>,
    seen: Mutex<Vec<Seen>>,
}

impl Provider for Recording {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn capabilities(&self, model: &str) -> ModelCapabilities {
        self.inner.capabilities(model)
    }

    fn encode(&self, req: &ModelRequest, blobs: &dyn BlobReader) -> Result<EncodedRequest, ProviderError> {
        self.encode_continuing(req, blobs, None)
    }

    fn encode_continuing(
        &self,
        req: &ModelRequest,
        blobs: &dyn BlobReader,
        prior: Option<Continues>,
    ) -> Result<EncodedRequest, ProviderError> {
        let enc = self.inner.encode_continuing(req, blobs, prior)?;
        self.seen.lock().unwrap().push(Seen {
            prior,
            entries: req.entries.len(),
            mark: enc.chain,
        });
        Ok(enc)
    }

    fn send<'a>(&'a self, enc: &'a EncodedRequest, deltas: &'a dyn DeltaSink) -> SendFuture<'a> {
        self.inner.send(enc, deltas)
    }

    fn max_attempts(&self) -> Option<u32> {
        self.inner.max_attempts()
    }
}

#[tokio::test]
async fn each_continuation_names_the_encode_it_continues_and_sends_the_sealed_bytes() {
    for kind in [Kind::Anthropic, Kind::Openai] {
        for ts in engines().await {
            let upstream = FakeUpstream::start().await;
            // SAFETY: each test binary sets the same value before any thread reads it.
            unsafe { std::env::set_var(KEY_ENV, SECRET) };
            let (name, url, route) = match kind {
                Kind::Anthropic => ("anthropic", upstream.base_url(), Route::Messages),
                _ => ("openai", upstream.openai_base_url(), Route::ChatCompletions),
            };
            let config = instance(kind, url, false);
            let inner: Arc<dyn Provider> = match kind {
                Kind::Anthropic => Arc::new(Anthropic::new(config.clone())),
                _ => Arc::new(OpenAi::new(config.clone())),
            };
            let recording = Arc::new(Recording {
                inner,
                seen: Mutex::new(Vec::new()),
            });
            let adapter: Arc<dyn Provider> = recording.clone();
            let w = common::world_with(ts, |b, scripts| {
                let mut providers = Providers::new(scripts.to_path_buf());
                providers.insert(name, adapter, config.instance());
                b.providers(providers)
            })
            .await;
            let m = "m-test";
            let replies = match kind {
                Kind::Anthropic => [
                    anthropic::Message::new(m)
                        .tool_use("c1", "runners_list", json!({}))
                        .reply(),
                    anthropic::Message::new(m)
                        .tool_use("c2", "runners_list", json!({}))
                        .reply(),
                    anthropic::Message::new(m).text("Done.").reply(),
                ],
                _ => [
                    openai::Completion::new(m).tool_call("c1", "runners_list", "{}").reply(),
                    openai::Completion::new(m).tool_call("c2", "runners_list", "{}").reply(),
                    openai::Completion::new(m).content("Done.").reply(),
                ],
            };
            // The bytes each round sent are the sealed ones, with identical tools.
            three_rounds(&w, &upstream, route, &format!("{name}/{m}"), replies).await;

            let seen = recording.seen.lock().unwrap().clone();
            assert_eq!(seen.len(), 3, "{seen:?}");
            assert!(seen[0].prior.is_none(), "the first round continues nothing");
            for pair in seen.windows(2) {
                let (before, after) = (&pair[0], &pair[1]);
                let mark = before.mark.expect("an adapter that keeps work marks its encode");
                assert_eq!(
                    after.prior,
                    Some(Continues {
                        mark,
                        entries: before.entries,
                    }),
                    "{name}: a round continues its predecessor's encode, all of its entries"
                );
                assert!(after.entries > before.entries);
            }
        }
    }
}
