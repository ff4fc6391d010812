//! What `homebot demo` is asked for (`DemoArgs`) and which model it talks to
//! (`ModelChoice`: the scripted one or a real endpoint).

#[derive(clap::Args, Debug, Clone, Default)]
pub struct DemoArgs {
    /// Use this OpenAI-compatible endpoint instead of the built-in scripted model, e.g.
    /// llama.cpp's server at http://127.0.0.1:8080/v1 (HOMEBOT_API_KEY is sent if set).
    #[arg(long = "model-url")]
    pub model_url: Option<String>,
    /// The model name to ask that endpoint for.
    #[arg(long, requires = "model_url")]
    pub model: Option<String>,
    /// Play the session and stop, instead of running on until Ctrl-C; the kitchen timer
    /// is 3 s instead of 10 s.
    #[arg(long)]
    pub exit: bool,
}

/// The model the demo talks to.
pub enum ModelChoice {
    Scripted(super::model::ScriptedModel),
    Real { url: String, name: String },
}

impl ModelChoice {
    pub fn scripted(&self) -> bool {
        matches!(self, ModelChoice::Scripted(_))
    }
    pub(super) fn url(&self) -> String {
        match self {
            ModelChoice::Scripted(m) => m.base_url(),
            ModelChoice::Real { url, .. } => url.clone(),
        }
    }
    pub(super) fn name(&self) -> String {
        match self {
            ModelChoice::Scripted(_) => super::script::MODEL.to_string(),
            ModelChoice::Real { name, .. } => name.clone(),
        }
    }
}
