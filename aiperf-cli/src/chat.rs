//! `aiperf chat`: the library's chat session ([`aiperf_runner::chat`]) at a prompt, or
//! once with `--quick`, printing as the Python AIPerf does: the reply as it streams, then
//! its stats block.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use aiperf_runner::chat::{load_chat_tokenizer, ChatOptions, ChatSession};

use crate::args::ChatArgs;

/// Runs the chat; 0 at the end of input (or after `--quick`), 1 when it could not start
/// or the quick message failed.
pub(crate) fn run(args: &ChatArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(chat(args)) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn chat(args: &ChatArgs) -> anyhow::Result<ExitCode> {
    let tokenizer = load_chat_tokenizer(args.tokenizer.as_deref(), &args.model).await?;
    let options = ChatOptions {
        api_key: args.api_key.clone(),
        system_prompt: args.system_prompt.clone(),
        history: !args.no_history,
        ..ChatOptions::new(&args.url, &args.model)
    };
    let mut session = ChatSession::new(options, tokenizer)?;
    if let Some(message) = &args.quick {
        let sent = turn(&mut session, message).await;
        return Ok(if sent {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    println!("Please enter a message for the chat model (Ctrl-D to exit):");
    loop {
        print!("> ");
        std::io::stdout().flush()?;
        let Some(message) = read_line().await? else {
            println!();
            return Ok(ExitCode::SUCCESS);
        };
        // A failed request is reported and the conversation goes on.
        turn(&mut session, &message).await;
    }
}

/// One message: the reply as it streams, a line break, the stats. False when it failed.
async fn turn(session: &mut ChatSession, message: &str) -> bool {
    let reply = session
        .send(message, |text| {
            print!("{text}");
            // A terminal shows each piece as it comes.
            let _ = std::io::stdout().flush();
        })
        .await;
    println!();
    match reply {
        Ok(reply) => {
            println!("{}", reply.stats);
            true
        }
        Err(error) => {
            eprintln!("{error}");
            false
        }
    }
}

/// The next line of standard input without its line ending, or `None` at its end.
async fn read_line() -> anyhow::Result<Option<String>> {
    let line = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .map(|n| (n, line))
    })
    .await??;
    Ok(match line {
        (0, _) => None,
        (_, line) => Some(line.trim_end_matches(['\n', '\r']).to_owned()),
    })
}
