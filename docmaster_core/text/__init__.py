"""Text functions shared by the pipeline's stages: whitespace and sentences
(:mod:`.words`), the word tokens of conditions and passages (:mod:`.terms`), and the
question-to-passage unit scoring of answers (:mod:`.answer_units`)."""
