use intent_rs::media::Image;
use intent_rs::{intents, Binary, DecisionError};

#[intents]
trait Review {
    #[intent("Do the photos show damage?")]
    async fn damaged(&self, photos: Vec<Image>, cover: Option<Image>) -> Result<Binary, DecisionError>;
}

fn main() {}
