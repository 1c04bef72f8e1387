//! `Dist::scaled_to`, which turns a sample of hold times into an estimate
//! for every hold: whatever the sample, the estimate accounts for exactly
//! the population, keeps the sample's shape and mean, and never invents
//! extremes.

use lockmeter_model::dist::{bucket_index, BUCKETS};
use lockmeter_model::Dist;
use proptest::prelude::*;

fn sample_of(values: &[u64]) -> Dist {
    let mut counts = vec![0u64; BUCKETS];
    for &v in values {
        counts[bucket_index(v)] += 1;
    }
    Dist::from_buckets(
        &counts,
        values.len() as u64,
        values.iter().sum(),
        values.iter().copied().min().unwrap_or(0),
        values.iter().copied().max().unwrap_or(0),
    )
}

proptest! {
    #[test]
    fn an_estimate_adds_up_to_its_population(
        values in prop::collection::vec(0u64..10_000_000, 1..200),
        extra in 0u64..100_000,
    ) {
        let sample = sample_of(&values);
        let population = sample.count + extra;
        let est = sample.scaled_to(population);
        prop_assert_eq!(est.count, population);
        prop_assert_eq!(est.buckets.iter().map(|b| b.1).sum::<u64>(), population);
        prop_assert_eq!((est.min, est.max), (sample.min, sample.max));
        // The mean is the sample's, up to the integer division of the total.
        let scale = population as f64 / sample.count as f64;
        let want = sample.total as f64 * scale;
        prop_assert!((est.total as f64 - want).abs() <= 1.0, "{} vs {want}", est.total);
        // Every bucket keeps its share of the sample, within one unit.
        for &(upper, c) in &sample.buckets {
            let scaled = est.buckets.iter().find(|b| b.0 == upper).map_or(0, |b| b.1);
            let exact = c as f64 * scale;
            prop_assert!((scaled as f64 - exact).abs() < 1.0, "bucket {upper}: {scaled} vs {exact}");
        }
        // No bucket the sample did not have.
        prop_assert!(est.buckets.iter().all(|b| sample.buckets.iter().any(|s| s.0 == b.0)));
    }
}
