//! `fake-upstream [TEXT]`: the fake upstream as a process, for scripts (`scripts/readme-run`
//! runs the README's real-model block against it). It answers every Anthropic Messages and
//! every Chat Completions request with one text reply (streamed when the request asks),
//! prints its base URL on stdout, and serves until it is killed.

use nexus_fake_upstream::{Expectation, FakeUpstream, Matcher, Route, anthropic, openai};
use serde_json::json;
use std::io::Write;

#[tokio::main]
async fn main() {
    let text = std::env::args().nth(1).unwrap_or_else(|| "Done.".into());
    let server = FakeUpstream::start().await;
    let message = anthropic::Message::new("claude-sonnet-4-5").text(&text).usage(120, 18);
    let completion = openai::Completion::new("gpt-4.1").content(&text).usage(120, 18);
    let streamed = || Matcher::json().pointer_eq("/stream", json!(true));
    for (route, stream, whole) in [
        (Route::Messages, message.stream(), message.reply()),
        (Route::ChatCompletions, completion.stream(), completion.reply()),
    ] {
        server
            .expect(route, Expectation::new(streamed(), stream).always())
            .expect(route, Expectation::any(whole).always());
    }
    println!("{}", server.base_url());
    std::io::stdout().flush().expect("stdout");
    std::future::pending::<()>().await;
}
